"""Tests for scaleout.hardware: the table's numbers against facts.md, and the unit helpers."""

import dataclasses

import numpy as np
import pytest

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
