"""Sample inputs for sample_ext's operators, read by `xcompat kernels operators`.

Each samples function returns argument tuples; xcompat derives the edge cases from them
(dtypes, layouts, empty and 0-dim tensors, NaN/Inf, values near the dtype's range).
"""

import torch


def scaled_add_samples():
    g = torch.Generator().manual_seed(0)
    return [
        (torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g), 0.5),
        (torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 3, 4, 5, generator=g), -2.0),
    ]


def scaled_add_reference(a, b, alpha):
    return a + alpha * b


SAMPLES = {"sample_ext::scaled_add": scaled_add_samples}
REFERENCES = {"sample_ext::scaled_add": scaled_add_reference}
