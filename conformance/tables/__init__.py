"""Every report's tables, described once (issue 56).

- `model`: `Document`, `Section`, `Table`, `Column`, `Row`, `Cell`: a report as data;
- `numbers`: one formatter per kind of number (ratios, bytes, seconds);
- `kinds`: one builder per report kind, from the JSON its command writes;
- `render`: the renderers that draw any document: terminal (rich), Markdown, HTML, CSV.
"""
