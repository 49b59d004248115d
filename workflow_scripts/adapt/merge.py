"""merge: weight averaging of two models of the same architecture (the paper merges the fine-tuned
model with its base). merged = weight x adapted + (1 - weight) x other, tensor by tensor, computed
in float64 and stored in the adapted tensor's dtype; integer buffers (position ids) must agree and
are kept."""
from __future__ import annotations


def average_state_dicts(adapted: dict, other: dict, weight: float) -> dict:
    import torch

    if set(adapted) != set(other):
        diff = sorted(set(adapted) ^ set(other))
        raise ValueError(f"merge: the models' parameters differ ({len(diff)} names, e.g. {diff[:3]}); "
                         "only models of the same architecture can be averaged")
    out = {}
    for name, a in adapted.items():
        b = other[name]
        if a.shape != b.shape:
            raise ValueError(f"merge: parameter {name} has shape {tuple(a.shape)} vs {tuple(b.shape)}")
        if a.is_floating_point():
            out[name] = (weight * a.double() + (1.0 - weight) * b.double().to(a.device)).to(a.dtype)
        else:
            if not torch.equal(a, b.to(a.device)):
                raise ValueError(f"merge: integer buffer {name} differs between the models")
            out[name] = a.clone()
    return out


def merge_into(st, other_st, weight: float) -> None:
    """Average `other_st`'s weights into `st` (in place)."""
    merged = average_state_dicts(st.state_dict(), other_st.state_dict(), weight)
    st.load_state_dict(merged)
