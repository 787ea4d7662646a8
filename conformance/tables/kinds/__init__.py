"""One builder per report kind: each makes a `Document` (or its tables) from the JSON its
command writes, once, for every renderer."""
