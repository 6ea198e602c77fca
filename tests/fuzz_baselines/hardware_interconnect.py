from fuzz import call

BASELINES = {
    "NVLinkGeneration": call(4, "H100", 2022, 18, 50.0, 900.0, "whitepaper"),
    "NVSwitchGeneration": call(
        3, 2022, 4, 64, 50.0, 3200.0, "DGX H100", 4, 8, 256, "DGX GH200", True, "blog"
    ),
    "System": call(
        "DGX GH200",
        2023,
        "GH200",
        4,
        3,
        256,
        8,
        8,
        400.0,
        "blog",
        all_to_all_tb_per_s=57.6,
        memory_tb=144.0,
        note="a note",
    ),
    "PCIeGeneration": call(5, 2019, 32.0, (128, 130), "PCI-SIG"),
    "NICSpeed": call("ConnectX-7", 400.0, 4, 100.0, "NDR", "400GbE", "datasheet"),
    "nvlink_generation": call(4),
    "system": call("DGX H100"),
}
