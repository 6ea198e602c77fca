from fuzz import call

BASELINES = {
    "rank_color": call(3),
    "template": call(),
    "new_figure": call(title_text="a figure", height=300),
}
