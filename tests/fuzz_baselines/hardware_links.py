from fuzz import call

BASELINES = {
    "gbit_per_s_to_gbyte_per_s": call(400.0),
    "gbyte_per_s_to_gbit_per_s": call(50.0),
    "LinkPreset": call("nic-400g", "nic", 50.0, 3e-6, "IEEE 802.3", note="", links=1),
    "link": call("nvlink4-h100"),
    "table_fields": call("nvlink", 4),
}
