from fuzz import call

BASELINES = {
    "plotly_js_path": call(),
    "static_path": call("scaleout.css"),
    "mathjax_es5_path": call(),
    "issue_url": call("https://github.com/o/r", "chapters/01_collectives", ".ipynb"),
    "lighter_page": call(
        '<html>\n    <script src="../_static/searchtools.js"></script>\n</html>',
        "../",
        search_page=False,
    ),
}
SKIP = {
    "setup": "a Sphinx hook: takes a Sphinx application",
    "PlotlyMimeRenderer": "a MyST-NB plugin class with static methods only",
}
