"""The channel of the RDMA-write model: what the network does to each transmission."""

from __future__ import annotations

import numpy as np

from .. import checks
from .config import MAX_TRANSMISSIONS, SimConfig


class Fates:
    """What the channel does to transmission k (the k-th packet put on the wire).

    ``lost[k]``, ``delayed[k]`` (never both): drawn in fixed chunks from two independent
    streams of ``numpy.random.default_rng(seed)``'s seed sequence, so the k-th transmission
    meets the same fate whatever the strategy (common random numbers) and the same fate
    for every run with the same seed. Losses are independent (probability ``loss``) or
    bursty: a Gilbert-Elliott chain whose bad state loses every packet, with mean burst
    ``burst_packets`` and the same long-run loss rate ``loss`` (Gilbert 1960, Elliott 1963;
    good stretches are capped at 1e18 packets, beyond any simulation).
    ``interesting`` lists the transmissions that are lost or late, in order.
    """

    CHUNK = 1 << 16

    def __init__(self, config: SimConfig):
        self.cfg = checks.instance("config", config, SimConfig)
        loss_seq, reorder_seq = np.random.SeedSequence(config.seed).spawn(2)
        self._loss_rng = np.random.default_rng(loss_seq)
        self._reorder_rng = np.random.default_rng(reorder_seq)
        self.size = 0  # transmissions with a fate so far
        self._lost = np.zeros(0, bool)
        self._delayed = np.zeros(0, bool)
        self._interesting = np.zeros(0, np.int64)
        self.interesting_list: list[int] = []  # the same, for fast scalar access
        self._bad, self._left = None, 0  # Gilbert-Elliott state carried across chunks

    @property
    def lost(self) -> np.ndarray:
        return self._lost[: self.size]

    @property
    def delayed(self) -> np.ndarray:
        return self._delayed[: self.size]

    @property
    def interesting(self) -> np.ndarray:
        return self._interesting[: len(self.interesting_list)]

    def ensure(self, k: int) -> None:
        """Draw fates until transmission index k - 1 has one (k <= MAX_TRANSMISSIONS)."""
        k = checks.integer("k", k, 0, MAX_TRANSMISSIONS)
        while self.size < k:
            lost = self._draw_losses(self.CHUNK)
            delayed = (self._reorder_rng.random(self.CHUNK) < self.cfg.reorder) & ~lost
            start = self.size
            self._lost = _put(self._lost, start, lost)
            self._delayed = _put(self._delayed, start, delayed)
            self.size = start + self.CHUNK
            new = np.flatnonzero(lost | delayed) + start
            self._interesting = _put(self._interesting, len(self.interesting_list), new)
            self.interesting_list.extend(new.tolist())

    def _draw_losses(self, size: int) -> np.ndarray:
        cfg, rng = self.cfg, self._loss_rng
        if cfg.loss == 0.0:
            return np.zeros(size, bool)
        if cfg.loss_model == "independent":
            return rng.random(size) < cfg.loss
        mean_bad = cfg.burst_packets
        mean_good = mean_bad * (1 - cfg.loss) / cfg.loss

        def stretch(mean):
            return int(rng.geometric(max(1 / mean, 1e-18)))

        if self._bad is None:  # start in the stationary distribution
            self._bad = bool(rng.random() < cfg.loss)
            self._left = stretch(mean_bad if self._bad else mean_good)
        out = np.zeros(size, bool)
        pos = 0
        while pos < size:
            take = min(self._left, size - pos)
            out[pos : pos + take] = self._bad
            pos += take
            self._left -= take
            if self._left == 0:
                self._bad = not self._bad
                self._left = stretch(mean_bad if self._bad else mean_good)
        return out


def _put(buffer: np.ndarray, start: int, values: np.ndarray) -> np.ndarray:
    """Write ``values`` at ``start``, doubling the buffer when it is full (amortised O(1))."""
    end = start + len(values)
    if end > len(buffer):
        grown = np.zeros(max(end, 2 * len(buffer)), buffer.dtype)
        grown[:start] = buffer[:start]
        buffer = grown
    buffer[start:end] = values
    return buffer
