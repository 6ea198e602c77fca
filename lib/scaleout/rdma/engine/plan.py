"""Step 5 of the batched engine: how far the sender may run ahead, and when it wakes.

``run_length`` answers "how many new PSNs from ``nxt`` would the per-packet loop send
back to back from time t?". A run is cut wherever the per-packet loop could decide
differently: it never extends past ``t + min_tx + rtt`` (nothing the run itself causes, and
nothing the receiver has not yet seen, can reach the sender earlier), nor past the first
known event that may change the sender's plan (a NAK, an acknowledgement that exposes a
hole, a timer, the last ACK); and each packet of it must pass the window test against the
cumulative ACKs already on their way back. ``wake`` finds the next instant at which an
idle sender could send again. Cutting a run early only costs time: the next step continues
at the same instant.
"""

from __future__ import annotations

from .sender import INF, Sender
from .wire import Wire


def run_length(s: Sender, t: int) -> int:
    """How many PSNs from ``s.nxt`` the per-packet loop would send back to back from t."""
    tx, P, W, gbn, n = s.tx, s.nxt, s.W, s.gbn, s.n
    horizon = min(t + s.min_tx + s.rtt, s.rto_deadline())
    if s.loss_heap and s.loss_heap[0][0] < horizon:
        horizon = s.loss_heap[0][0]
    # Pieces of the cumulative ACK the sender will have seen at send j, as
    # (first j, cum at that j, +1 per j?, length); cums only ever grow.
    pieces = []
    for item in s.fb:
        f0, m = item[0], item[1]
        if f0 >= horizon:
            break
        special = s.special(item)
        if special < m and f0 + special * tx < horizon:
            horizon = f0 + special * tx
        pieces.append((-(-(f0 - t) // tx), item[4], item[5], m))
    jmax = min(n - P, -(-(horizon - t) // tx))
    if jmax <= 0:
        return 0
    una = s.una
    if P + jmax - 1 < una + W and not (gbn and pieces):
        return jmax

    def first_bad(a, b, u, step):
        """First j in [a, b) failing the test when the newest cumulative ACK seen at
        send j is u (step 0) or u + (j - a) (step 1); b if none fails."""
        if a >= b:
            return b
        if not step or u + (b - 1 - a) <= una:  # flat: max(una, u) throughout
            cum = u if u > una else una
            bad = b if cum + W - P >= b else max(a, cum + W - P)
            return a if gbn and cum > P + a else bad
        x = a + max(0, una - u + 1)  # from x on, the climbing ACK exceeds una
        bad = first_bad(a, x, una, 0)
        if bad < x:
            return bad
        return x if P - u + a >= W or (gbn and u - a > P) else b

    start, cum = 0, una
    for idx, (c, cum0, step, m) in enumerate(pieces):
        c = min(c, jmax)
        bad = first_bad(start, c, cum, 0)  # before this item's first ACK is seen
        if bad < c or c == jmax:
            return bad
        end = jmax if idx + 1 == len(pieces) else min(max(pieces[idx + 1][0], c), jmax)
        if step:  # the ACK climbs by one per send for m sends, then stays
            climb_end = min(end, c + m)
            bad = first_bad(c, climb_end, cum0, 1)
            if bad < climb_end:
                return bad
            start, cum = climb_end, max(cum0 + m - 1, una)
        else:
            start, cum = c, max(cum0, una)
    return first_bad(start, jmax, cum, 0)


def wake(s: Sender, wire: Wire, t: int) -> int:
    """Idle sender: the next instant at which something could become sendable."""
    tx, when = s.tx, s.rto_deadline()
    if s.loss_heap:
        when = min(when, s.loss_heap[0][0])
    need = s.nxt - s.W + 1 if s.nxt < s.n else INF
    for item in s.fb:
        f0, m, k0, p0, cum0, step, nak = item
        if f0 >= when:
            break
        special = s.special(item)
        if step:  # cumulative ACK climbs by one per element
            opens = max(0, need - cum0)
            if s.gbn:
                opens = min(opens, max(0, s.nxt + 1 - cum0))
        else:
            jumps = cum0 >= need or (s.gbn and cum0 > s.nxt)
            opens = 0 if jumps else m
        i = min(special, opens)
        if i < m:
            when = min(when, f0 + i * tx)
            break
    arrival = wire.next_arrival()
    if arrival is not None:
        when = min(when, arrival + wire.back)
    if when >= INF:
        raise RuntimeError("sender idle with nothing in flight (model error)")
    return max(t, when)
