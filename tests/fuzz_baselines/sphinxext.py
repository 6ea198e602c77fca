from fuzz import call

BASELINES = {
    "plotly_js_path": call(),
    "static_path": call("scaleout.css"),
    "mathjax_es5_path": call(),
    "issue_url": call("https://github.com/o/r", "chapters/01_collectives", ".ipynb"),
}
SKIP = {
    "setup": "a Sphinx hook: takes a Sphinx application",
    "PlotlyMimeRenderer": "a MyST-NB plugin class with static methods only",
}
