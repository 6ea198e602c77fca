from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
TWO = PL.Cluster("2 A100", 2)
BASELINES = {
    "LayerTimes": call(1e-3, 2e-3, 0.0, (1e-4, 2e-4), (1e-4, 2e-4)),
    "layer_times": call(TINY, TWO, 2, 2, True, "selective", False),
    "logits_seconds": call(TINY, TWO, 2, 2),
    "optimizer_seconds": call(1e9, TWO),
    "padded_vocab": call(50257, 8),
}
