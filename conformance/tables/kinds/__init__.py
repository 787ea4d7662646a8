"""One builder per report kind: each makes a `Document` (or its tables) from the JSON its
command writes (or, for `compare`, the `Comparison` it holds), once, for every renderer.
Every table of every report is built here and nowhere else (tests/core/tables/test_homes.py);
the page's sections are `conformance.page.kinds`' entries, which call these builders."""
