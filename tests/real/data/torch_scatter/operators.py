"""Sample inputs for torch_scatter 2.1.2's operators, as its maintainer would declare them in
``.xcompat/operators.py``: the shapes its own tests use (a 2-D ``src`` scattered along its last
dimension with an index of the same shape, CSR pointers and sorted COO indices over the first
one), and float64 references from plain torch for the reductions whose result torch defines
the same way. The min/max operators also return the position of each extreme: they are held
to the operator's own result on contiguous CPU copies.
"""

import torch

INDEX = torch.tensor([[0, 1, 0, 2, 1], [3, 3, 0, 1, 2], [2, 0, 0, 1, 3]])
INDPTR = torch.tensor([0, 2, 2, 5])  # three segments of rows 0-1, none, 2-4
SORTED = torch.tensor([0, 0, 2, 2, 2])  # the same segments as COO indices


def _src(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def scatter_samples():
    return [
        (_src(3, 5), INDEX, -1, None, None),
        (_src(3, 5), INDEX, 1, None, 6),  # a dim_size beyond the largest index: empty slots
    ]


def _size(index, dim, dim_size):
    return dim_size if dim_size is not None else (int(index.max()) + 1 if index.numel() else 0)


def _shape(src, index, dim, dim_size):
    shape = list(src.shape)
    shape[dim] = _size(index, dim, dim_size)
    return shape


def scatter_sum_reference(src, index, dim, out, dim_size):
    return torch.zeros(_shape(src, index, dim, dim_size), dtype=src.dtype).scatter_add_(dim, index, src)


def scatter_mean_reference(src, index, dim, out, dim_size):
    total = scatter_sum_reference(src, index, dim, out, dim_size)
    count = scatter_sum_reference(torch.ones_like(src), index, dim, out, dim_size)
    return total / count.clamp(min=1)


def scatter_mul_reference(src, index, dim, out, dim_size):
    ones = torch.ones(_shape(src, index, dim, dim_size), dtype=src.dtype)
    return ones.scatter_reduce_(dim, index, src, "prod", include_self=True)


def csr_samples():
    return [(_src(5, 4), INDPTR, None)]


def coo_samples():
    return [(_src(5, 4), SORTED, None, None), (_src(5, 4), SORTED, None, 4)]


def gather_csr_samples():
    return [(_src(3, 4), INDPTR, None)]


def gather_coo_samples():
    return [(_src(3, 4), SORTED, None)]


def segment_sum_csr_reference(src, indptr, out):
    return torch.stack([src[int(a):int(b)].sum(0) for a, b in zip(indptr[:-1], indptr[1:], strict=True)])


def segment_mean_csr_reference(src, indptr, out):
    sums = segment_sum_csr_reference(src, indptr, out)
    counts = (indptr[1:] - indptr[:-1]).clamp(min=1).to(src.dtype)
    return sums / counts.unsqueeze(-1)


def gather_csr_reference(src, indptr, out):
    return src.repeat_interleave(indptr[1:] - indptr[:-1], dim=0)


def gather_coo_reference(src, index, out):
    return src.index_select(0, index)


SAMPLES = {
    "torch_scatter::scatter_sum": scatter_samples,
    "torch_scatter::scatter_mean": scatter_samples,
    "torch_scatter::scatter_mul": scatter_samples,
    "torch_scatter::scatter_min": scatter_samples,
    "torch_scatter::scatter_max": scatter_samples,
    "torch_scatter::segment_sum_csr": csr_samples,
    "torch_scatter::segment_mean_csr": csr_samples,
    "torch_scatter::segment_min_csr": csr_samples,
    "torch_scatter::segment_max_csr": csr_samples,
    "torch_scatter::gather_csr": gather_csr_samples,
    "torch_scatter::segment_sum_coo": coo_samples,
    "torch_scatter::segment_mean_coo": coo_samples,
    "torch_scatter::segment_min_coo": coo_samples,
    "torch_scatter::segment_max_coo": coo_samples,
    "torch_scatter::gather_coo": gather_coo_samples,
}
REFERENCES = {
    "torch_scatter::scatter_sum": scatter_sum_reference,
    "torch_scatter::scatter_mean": scatter_mean_reference,
    "torch_scatter::scatter_mul": scatter_mul_reference,
    "torch_scatter::segment_sum_csr": segment_sum_csr_reference,
    "torch_scatter::segment_mean_csr": segment_mean_csr_reference,
    "torch_scatter::gather_csr": gather_csr_reference,
    "torch_scatter::gather_coo": gather_coo_reference,
}
