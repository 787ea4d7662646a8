"""The renderers: each draws any `conformance.tables.model.Document` (or one `Table`).

- `terminal`: rich, for a console (aligned plain text off a terminal);
- `markdown`: GitHub-flavoured Markdown (a CI job summary), every data cell escaped;
- `html`: the report page's tables;
- `csv`: one table's cells, a header row first.

How every table looks is decided here and nowhere else.
"""
