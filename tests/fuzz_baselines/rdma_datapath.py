from fuzz import call

from scaleout.hardware import link

BASELINES = {"data_path_times": call(1e9, link("nic-400g"), link("pcie5-x16"), 4 * 2**20)}
