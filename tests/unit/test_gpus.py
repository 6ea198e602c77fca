"""The GPU table of scaleout.hardware: values, sources, secondary marks, NVLink by reference."""

from __future__ import annotations

import dataclasses

import pytest

from scaleout import hardware as H

NAMES = ("A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H200", "B200", "GB200")


def test_every_required_gpu_is_there_and_named_as_the_issue_asks():
    assert set(NAMES) <= set(H.GPUS)
    for name in NAMES:
        assert H.gpu(name).name == name
        assert H.gpu(H.gpu(name)) is H.gpu(name)  # a row passes through


@pytest.mark.parametrize(
    "name, dtype, tflops",
    [
        ("A100-80GB", "bf16", 312), ("A100-80GB", "tf32", 156), ("A100-80GB", "fp32", 19.5),
        ("H100-SXM", "bf16", 1979 / 2), ("H100-SXM", "fp8", 3958 / 2),
        ("H100-SXM", "tf32", 989 / 2), ("H100-PCIe", "bf16", 1513 / 2),
        ("H200", "bf16", 1979 / 2), ("B200", "bf16", 2250), ("B200", "fp8", 4500),
        ("GB200", "bf16", 2500), ("V100-32GB", "fp16", 125),
    ],
)  # fmt: skip
def test_dense_peaks_are_half_the_with_sparsity_datasheet_figures(name, dtype, tflops):
    assert H.gpu(name).peak_flops(dtype) == pytest.approx(tflops * 1e12)


def test_facts_md_dense_bf16_peaks():
    assert H.gpu("A100-80GB").peak_flops() == 312e12
    assert round(H.gpu("H100-SXM").peak_flops() / 1e12) == 990  # facts.md: 989 (floor)
    assert H.gpu("B200").peak_flops() == 2250e12


@pytest.mark.parametrize(
    "name, gb, tb_s, sms",
    [("A100-40GB", 40, 1.555, 108), ("A100-80GB", 80, 2.039, 108), ("H100-SXM", 80, 3.35, 132),
     ("H100-PCIe", 80, 2.0, 114), ("H200", 141, 4.8, 132), ("B200", 180, 8.0, 148),
     ("GB200", 186, 8.0, 148)],
)  # fmt: skip
def test_memory_and_sms(name, gb, tb_s, sms):
    g = H.gpu(name)
    assert (g.memory_gb, g.hbm_tb_per_s, g.sms) == (gb, tb_s, sms)
    assert g.memory_bytes == gb * 1e9 and g.hbm_bytes_per_s == tb_s * 1e12


def test_nvlink_comes_from_the_link_table_not_a_second_copy():
    for g in H.GPUS.values():
        row = H.nvlink_generation(g.nvlink_generation)
        assert g.nvlink == row.per_link * g.nvlink_links
    bi = "bidirectional"
    assert H.gpu("A100-80GB").nvlink.to("GB/s", bi) == 600
    assert H.gpu("H100-SXM").nvlink.to("GB/s", bi) == 900
    assert H.gpu("H100-PCIe").nvlink.to("GB/s", bi) == 600
    assert H.gpu("B200").nvlink.to("GB/s", bi) == 1800 == H.gpu("GB200").nvlink.to("GB/s", bi)
    assert not any(f.name.startswith("nvlink_gb") for f in dataclasses.fields(H.GPU))


def test_sources_name_documents_and_unconfirmed_fields_are_secondary():
    for g in H.GPUS.values():
        assert "NVIDIA" in g.source and ("datasheet" in g.source or "specifications" in g.source)
        for field in g.secondary:
            assert field in H.GPU_FIELDS
        if g.secondary:
            assert g.note, f"{g.name}: secondary fields need a note saying where they come from"
    assert "sms" in H.gpu("B200").secondary and H.gpu("B200").l2_mb is None
    assert {"sms", "l2_mb"} <= set(H.gpu("H200").secondary)
    assert H.gpu("A100-80GB").secondary == () and H.gpu("H100-SXM").secondary == ()
    assert "with sparsity" in H.gpu("H100-SXM").note


def test_dtypes_and_ridge():
    assert H.gpu("A100-80GB").dtypes == ("fp32", "tf32", "bf16", "fp16")
    assert "fp8" in H.gpu("H100-SXM").dtypes and "bf16" not in H.gpu("V100-32GB").dtypes
    assert H.gpu("A100-80GB").ridge_intensity() == pytest.approx(312e12 / 2.039e12)
    for g in H.GPUS.values():
        for d in g.dtypes:
            if d in ("bf16", "fp16", "fp8") and "bf16" in g.dtypes:
                assert g.peak_flops(d) >= g.peak_flops("bf16") >= g.peak_flops("tf32")


@pytest.mark.parametrize(
    "change, match",
    [({"bf16_tflops": 0.0}, "bf16_tflops"), ({"sms": 0}, "sms"), ({"nvlink_links": 19}, "links"),
     ({"secondary": ("nope",)}, "secondary"), ({"form_factor": "OAM"}, "form_factor"),
     ({"memory_gb": float("nan")}, "memory_gb"), ({"fp32_tflops": True}, "fp32_tflops")],
)  # fmt: skip
def test_bad_rows_are_rejected(change, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(H.gpu("H100-SXM"), **change)


def test_bad_lookups():
    with pytest.raises(ValueError, match="name must be one of"):
        H.gpu("H100")
    with pytest.raises(ValueError, match="dtype"):
        H.gpu("A100-80GB").peak_flops("fp8")
    with pytest.raises(ValueError, match="name"):
        H.gpu(["H100-SXM"])
