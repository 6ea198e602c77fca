"""Tests for scaleout.hardware: the table's numbers against facts.md, and the unit helpers."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleout import hardware as hw

# facts.md, "NVLink and NVSwitch": links per GPU, GB/s per link, GB/s per GPU (bidirectional)
NVLINK_FACTS = {
    "nvlink1-p100": (4, 40, 160),
    "nvlink2-v100": (6, 50, 300),
    "nvlink3-a100": (12, 50, 600),
    "nvlink4-h100": (18, 50, 900),
    "nvlink5-b200": (18, 100, 1800),
}


@pytest.mark.parametrize("name, facts", NVLINK_FACTS.items())
def test_nvlink_per_gpu_bandwidth_is_links_times_per_link(name, facts):
    links, per_link, per_gpu = facts
    preset = hw.link(name)
    assert preset.kind == "nvlink" and preset.links == links
    assert preset.gb_per_s_bidirectional == links * per_link == per_gpu
    assert preset.gb_per_s == per_gpu / 2  # stored per direction


def test_p100_and_v100_are_marked_secondary():
    for name in ("nvlink1-p100", "nvlink2-v100"):
        assert "secondary" in hw.link(name).note
    assert "secondary" not in hw.link("nvlink4-h100").note


def test_the_nine_x_ratio_of_dgx_h100():
    nvlink, nic = hw.link("nvlink4-h100"), hw.link("nic-400g")
    assert nic.gb_per_s == 50.0  # 400 Gb/s per direction
    # 900 GB/s / (2 x 50 GB/s) = 9: bidirectional against bidirectional ...
    assert nvlink.gb_per_s_bidirectional / nic.gb_per_s_bidirectional == 9.0
    # ... the same as per direction against per direction; mixing the two would give 18.
    assert nvlink.gb_per_s / nic.gb_per_s == 9.0
    assert nvlink.gb_per_s_bidirectional / nic.gb_per_s == 18.0


@pytest.mark.parametrize("gen, gt_per_s", [(3, 8), (4, 16), (5, 32)])
def test_pcie_x16_per_direction_from_the_line_rate(gen, gt_per_s):
    preset = hw.link(f"pcie{gen}-x16")
    raw = gt_per_s * 16 * 128 / 130 / 8  # GT/s x lanes x encoding / bits per byte
    assert preset.gb_per_s == pytest.approx(raw, rel=1e-3)
    assert preset.kind == "pcie"


@pytest.mark.parametrize("gbit", [100, 200, 400])
def test_nic_rates(gbit):
    preset = hw.link(f"nic-{gbit}g")
    assert preset.kind == "nic"
    assert preset.gb_per_s == hw.gbit_per_s_to_gbyte_per_s(gbit) == gbit / 8
    assert preset.beta_s_per_byte == pytest.approx(8 / (gbit * 1e9))
    assert 2e-6 <= preset.alpha_s <= 5e-6


def test_every_preset_is_complete_and_keyed_by_name():
    expected = {"pcie3-x16", "pcie4-x16", "pcie5-x16", "nic-100g", "nic-200g", "nic-400g"}
    assert set(hw.LINKS) == expected | set(NVLINK_FACTS)
    for key, preset in hw.LINKS.items():
        assert key == preset.name
        assert preset.kind in {"pcie", "nvlink", "nic"}
        assert preset.gb_per_s > 0 and preset.alpha_s > 0
        assert preset.source and "assumption" in preset.note
        assert preset.beta_s_per_byte == 1 / (preset.gb_per_s * 1e9)
        assert preset.gb_per_s_bidirectional == 2 * preset.gb_per_s
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.LINKS["nic-400g"].gb_per_s = 1.0


def test_unknown_link_lists_names():
    with pytest.raises(ValueError, match=r"name must be one of .*nvlink4-h100"):
        hw.link("nvlink9")


def test_unit_helpers():
    assert hw.gbit_per_s_to_gbyte_per_s(400) == 50.0
    assert hw.gbyte_per_s_to_gbit_per_s(50) == 400.0
    x = np.array([100.0, 200.0, 400.0])
    np.testing.assert_array_equal(hw.gbit_per_s_to_gbyte_per_s(x), [12.5, 25.0, 50.0])
    np.testing.assert_array_equal(hw.gbyte_per_s_to_gbit_per_s(hw.gbit_per_s_to_gbyte_per_s(x)), x)
    for bad in (-1.0, np.inf, "fast", [1.0, np.nan]):
        with pytest.raises(ValueError, match="x must be"):
            hw.gbit_per_s_to_gbyte_per_s(bad)
        with pytest.raises(ValueError, match="x must be"):
            hw.gbyte_per_s_to_gbit_per_s(bad)


# --- Chapter 11 tables: NVLink, NVSwitch, systems, PCIe, NICs, and the Bandwidth unit -------


@given(
    value=st.floats(0, 1e6, allow_nan=False),
    unit=st.sampled_from(sorted(hw.UNITS)),
    direction=st.sampled_from(hw.DIRECTIONS),
)
def test_bandwidth_round_trips_and_keeps_units_apart(value, unit, direction):
    bw = hw.Bandwidth.of(value, unit, direction)
    assert bw.to(unit, direction) == pytest.approx(value, rel=1e-12, abs=1e-300)
    assert bw.to(unit, "bidirectional") == pytest.approx(2 * bw.to(unit, "per direction"))
    assert bw.to("Gb/s", direction) == pytest.approx(8 * bw.to("GB/s", direction))
    assert bw.to("TB/s", direction) == pytest.approx(bw.to("GB/s", direction) / 1000)


def test_bandwidth_of_a_400g_nic_and_an_h100():
    nic = hw.Bandwidth.of(400, "Gb/s", "per direction")
    assert nic.to("GB/s", "per direction") == 50 and nic.to("GB/s", "bidirectional") == 100
    assert nic.label("GB/s", "bidirectional", "per NIC") == "100 GB/s bidirectional, per NIC"
    h100 = hw.nvlink_generation(4)
    assert h100.per_gpu.to("GB/s", "per direction") == 450
    assert h100.per_gpu.to("Gb/s", "per direction") == 3600
    # a ratio of two Bandwidths is like with like: 9, never the 18 of mixed directions
    assert h100.per_gpu / nic == 9.0
    assert (18 * h100.per_link) == h100.per_gpu
    assert (h100.per_gpu / 18) == h100.per_link and nic + nic == 2 * nic


def test_bandwidth_rejects_unlabelled_or_bad_values():
    with pytest.raises(ValueError, match="unit must be one of"):
        hw.Bandwidth.of(1, "GBps", "per direction")
    with pytest.raises(ValueError, match="direction must be one of"):
        hw.Bandwidth.of(1, "GB/s", "both")
    with pytest.raises(ValueError, match="direction must be one of"):
        hw.Bandwidth.of(1, "GB/s", "per direction").to("GB/s", "duplex")
    with pytest.raises(ValueError, match="value must be"):
        hw.Bandwidth.of(-1, "GB/s", "per direction")
    with pytest.raises(ValueError, match="bytes_per_s must be"):
        hw.Bandwidth(float("nan"))
    with pytest.raises(ValueError, match="zero bandwidth"):
        hw.Bandwidth(1.0) / hw.Bandwidth(0.0)


@pytest.mark.parametrize("row", hw.NVLINK_GENERATIONS, ids=lambda r: r.gpu)
def test_nvlink_rows_are_self_consistent_and_sourced(row):
    assert row.per_gpu == row.links * row.per_link  # per GPU = links x per link
    assert row.per_gpu.to("GB/s", "bidirectional") == 2 * row.per_gpu.to("GB/s", "per direction")
    assert row.per_gpu.to("GB/s", "bidirectional") == row.gpu_gb_per_s_bidirectional
    assert hw.link(row.preset).gb_per_s == row.per_gpu.to("GB/s", "per direction")
    assert hw.link(row.preset).links == row.links
    assert row.source and ("whitepaper" in row.source or "Brief" in row.source)
    assert row.secondary == (row.gpu in ("P100", "V100"))


def test_nvlink_growth_the_chapter_states():
    first, last = hw.NVLINK_GENERATIONS[0], hw.NVLINK_GENERATIONS[-1]
    assert (first.links, first.link_gb_per_s_bidirectional) == (4, 40)
    h100 = hw.nvlink_generation(4)
    assert (h100.links, h100.link_gb_per_s_bidirectional) == (18, 50)
    assert (last.links, last.link_gb_per_s_bidirectional) == (18, 100)
    years = [r.year for r in hw.NVLINK_GENERATIONS]
    assert years == sorted(years)
    with pytest.raises(ValueError, match="generation must be one of"):
        hw.nvlink_generation(6)


@pytest.mark.parametrize("sw", hw.NVSWITCH_GENERATIONS, ids=lambda s: f"gen{s.generation}")
def test_nvswitch_rows_are_self_consistent_and_sourced(sw):
    assert sw.per_chip == sw.ports * sw.per_port  # the vendor aggregate = ports x port
    link = hw.nvlink_generation(sw.nvlink_generation)
    assert sw.per_port == link.per_link  # a switch port is one NVLink of its generation
    # enough ports for every link of every GPU of the system it first shipped in
    assert sw.chips_per_system * sw.ports >= sw.gpus_per_system * link.links
    assert sw.max_gpus_per_domain >= sw.gpus_per_system and sw.source
    system = hw.system(sw.system)
    assert (system.nvswitch_generation, system.gpus_per_nvlink_domain) == (
        sw.generation,
        sw.gpus_per_system,
    )


def test_nvswitch_facts_the_chapter_corrects():
    ports = {sw.generation: sw.ports for sw in hw.NVSWITCH_GENERATIONS}
    assert ports == {1: 18, 2: 36, 3: 64, 4: 72}  # "18 ports" holds for gen 1 only
    assert [sw.generation for sw in hw.NVSWITCH_GENERATIONS if sw.ports == 18] == [1]
    gen4 = hw.NVSWITCH_GENERATIONS[-1]
    assert (2 * gen4.per_chip).to("TB/s", "bidirectional") == 14.4  # the 144-port tray
    nvl72 = hw.system("GB200 NVL72")
    assert gen4.chips_per_system * gen4.ports == nvl72.gpus_per_nvlink_domain * 18  # all used
    total = (nvl72.nvlink_per_gpu * nvl72.gpus_per_nvlink_domain).to("TB/s", "bidirectional")
    assert total == pytest.approx(129.6) and round(total, -1) == 130
    assert hw.system("DGX GH200").gpus_per_nvlink_domain == 256
    assert [sw.in_switch_reduction for sw in hw.NVSWITCH_GENERATIONS] == [False, False, True, True]
    assert hw.NVSWITCH_GENERATIONS[1].secondary and "secondary" in hw.NVSWITCH_GENERATIONS[1].note


def test_systems_and_the_server_boundary():
    h100 = hw.system("DGX H100")
    assert h100.nic_per_gpu == hw.Bandwidth.of(400, "Gb/s", "per direction")
    assert h100.nvlink_to_network_ratio == 9.0
    ratios = {s.name: s.nvlink_to_network_ratio for s in hw.SYSTEMS}
    assert ratios["DGX A100"] == 12 and ratios["DGX B200"] == 18 and ratios["DGX-2"] == 24
    assert ratios["GB200 NVL72"] is None
    for s in hw.SYSTEMS:
        assert s.source and s.nvlink_generation in {r.generation for r in hw.NVLINK_GENERATIONS}
        assert (s.nics_per_server is None) == (s.nic_gbit_per_s is None)
    with pytest.raises(ValueError, match="name must be one of"):
        hw.system("DGX-3")


@pytest.mark.parametrize("gen", hw.PCIE_GENERATIONS, ids=lambda g: f"gen{g.generation}")
def test_pcie_rows(gen):
    payload, line = gen.encoding
    expected = gen.gt_per_s * 16 * payload / line / 8  # GB/s per direction, x16
    assert gen.x(16).to("GB/s", "per direction") == pytest.approx(expected)
    assert gen.x(16) == 16 * gen.x(1) and gen.source.startswith("PCI-SIG")
    if f"pcie{gen.generation}-x16" in hw.LINKS:
        assert hw.link(f"pcie{gen.generation}-x16").gb_per_s == pytest.approx(expected, rel=1e-3)
    with pytest.raises(ValueError, match="lanes must be one of"):
        gen.x(3)


def test_pcie_doubles_per_generation_and_nvidias_7x():
    rates = [g.x(16) for g in hw.PCIE_GENERATIONS]
    assert all(b / a == pytest.approx(2, rel=0.25) for a, b in zip(rates, rates[1:], strict=False))
    gen5 = hw.PCIE_GENERATIONS[4].x(16)
    assert hw.nvlink_generation(4).per_gpu / gen5 == pytest.approx(7.14, abs=0.01)  # "over 7x"


@pytest.mark.parametrize("nic", hw.NIC_SPEEDS, ids=lambda n: n.adapter)
def test_nic_rows(nic):
    assert nic.lanes * nic.lane_gbit_per_s == nic.gbit_per_s
    assert nic.bandwidth.to("GB/s", "per direction") == nic.gbit_per_s / 8
    assert nic.source and nic.ethernet == f"{nic.gbit_per_s}GbE"
    name = f"nic-{nic.gbit_per_s}g"
    if name in hw.LINKS:
        assert hw.link(name).gb_per_s == nic.bandwidth.to("GB/s", "per direction")


# --- the 256-GPU NVLink domains: which figure belongs to which system -----------------------
def test_57_6_tb_s_belongs_to_the_2022_h100_nvlink_switch_system():
    nvss, gh = hw.system("H100 NVLink Switch System"), hw.system("DGX GH200")
    assert (nvss.year, nvss.gpu, nvss.gpus_per_nvlink_domain) == (2022, "H100", 256)
    assert nvss.all_to_all_tb_per_s == 57.6 and "H100" in nvss.source and "57.6" in nvss.source
    assert gh.all_to_all_tb_per_s is None and "57.6" not in gh.source  # not DGX GH200's figure
    assert (gh.year, gh.gpus_per_nvlink_domain, gh.memory_tb) == (2023, 256, 144.0)
    inject = (nvss.nvlink_per_gpu * 256).to("TB/s", "per direction")
    assert inject == 115.2 and nvss.all_to_all_tb_per_s / inject == 0.5  # half of it
    assert gh.nvlink_per_gpu == nvss.nvlink_per_gpu  # both NVLink 4: 900 GB/s bidirectional


# --- issue 21: records validate when built -----------------------------------------------------
@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: hw.LinkPreset("x", "nic", 0.0, 1e-6, "src"),
            "gb_per_s must be a finite number > 0",
        ),
        (lambda: hw.LinkPreset("x", "nic", 50.0, -1.0, "src"), "alpha_s must be"),
        (lambda: hw.LinkPreset("x", "wifi", 50.0, 1e-6, "src"), "kind must be one of"),
        (lambda: hw.LinkPreset("x", "nic", 50.0, 1e-6, "src", links=0), "links must be"),
        (lambda: hw.LinkPreset("x", "nic", "50", 1e-6, "src"), "gb_per_s must be"),
        (lambda: hw.link({}), "name must be one of"),
        (lambda: hw.link(["nic-400g"]), "name must be one of"),
        (lambda: hw.nvlink_generation(4.0), "generation must be one of"),
        (lambda: hw.nvlink_generation(True), "generation must be one of"),
        (lambda: hw.system({}), "name must be one of"),
        (lambda: hw.NVLinkGeneration(4, "H100", 2022, 18, 50.0, 800.0, "s"), "links x per link"),
        (lambda: hw.NICSpeed("CX", 400.0, 4, 50.0, "NDR", "400GbE", "s"), "lanes x lane"),
        (lambda: hw.System("x", 2022, "H100", 9, 3, 8, 8, 8, 400.0, "s"), "nvlink_generation"),
        (lambda: hw.System("x", 2022, "H100", 4, 3, 8, 8, 8, None, "s"), "both None or both"),
        (lambda: hw.System("x", 2022, "H100", 4, 3, 8, None, 8, 400.0, "s"), "gpus_per_server"),
        (lambda: hw.PCIeGeneration(5, 2019, 32.0, (130, 128), "s"), "encoding must be"),
        (lambda: hw.PCIE_GENERATIONS[4].x(16.0), "lanes must be one of"),
        (lambda: hw.Bandwidth(-1.0), "bytes_per_s must be"),
        (lambda: hw.Bandwidth(1.0) * float("inf"), "k must be"),
        (lambda: hw.Bandwidth(1.0) / 0, "k must be a finite number > 0"),
        (lambda: hw.Bandwidth.of(1e308, "TB/s", "per direction"), "must stay finite"),
        (lambda: hw.Bandwidth(1.0).label("GB/s", "per direction", 3), "scope must be"),
        (lambda: hw.gbyte_per_s_to_gbit_per_s(1e308), "x must be finite real values in"),
        (lambda: hw.gbit_per_s_to_gbyte_per_s("400"), "x must be"),
    ],
)
def test_bad_records_and_arguments_raise_value_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@given(st.floats(1e-3, 1e6), st.floats(0, 1e-3), st.integers(1, 64))
def test_every_valid_preset_prices_a_byte(gb_per_s, alpha_s, links):
    preset = hw.LinkPreset("x", "nvlink", gb_per_s, alpha_s, "a source", links=links)
    assert preset.beta_s_per_byte > 0 and preset.gb_per_s_bidirectional == 2 * gb_per_s
