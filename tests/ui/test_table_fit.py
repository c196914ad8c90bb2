"""The one rule every table follows at a width (tracetui/ui/view/table_fit.py, no terminal):
the name gets the room first, empty and repeated columns are left out and said, long names are
cut in the middle keeping their tail, and two different names are never cut to the same."""

from __future__ import annotations

from rich.cells import cell_len

from tracetui.ui.view.table_fit import ELLIPSIS, NAME_FLOOR, Column, collapse_brackets, cut_name, cut_names, fit_table

CONVS = ["aten::cudnn_convolution", "aten::_convolution", "aten::convolution", "aten::addmm"]
ATTENTION = ["aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::scaled_dot_product_attention"]


def test_a_long_name_is_cut_in_the_middle_keeping_its_tail():
    assert cut_name("aten::cudnn_convolution", 40) == "aten::cudnn_convolution"
    assert cut_name("aten::cudnn_convolution", 20) == "aten::…n_convolution"
    name = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::f>(int, g)"
    assert collapse_brackets(name) == "at::native::vectorized_elementwise_kernel<…>(…)"
    assert cut_name(name, 60) == "at::native::vectorized_elementwise_kernel<…>(…)"
    assert cut_name(name, 200) == name  # whole when it fits
    assert collapse_brackets("DtoD (Device -> Device)") == "DtoD (Device -> Device)"  # not C++ brackets
    # a name whose template arguments are what tells it apart keeps them, cut in the middle
    cutlass = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(P::Params)"
    assert collapse_brackets(cutlass) == "cutlass::Kernel2<…>(…)"
    assert cut_name(cutlass, 37) == "cutlass::…6_32x32_128x2_tn_align8>(…)"
    for width in range(1, 30):
        assert cell_len(cut_name(name, width)) <= width


def test_different_names_are_never_cut_to_the_same():
    for names in (CONVS, ATTENTION, [f"aten::a{'x' * 20}{k}" for k in range(30)]):
        for width in range(NAME_FLOOR, 45):  # the narrowest a table draws a name
            cuts = cut_names(names, width)
            assert all(cell_len(c) <= width for c in cuts), (width, cuts)
            assert len(set(cuts)) == len(set(names)), (width, cuts)
    assert cut_names(["aten::addmm"] * 3, 6) == ["aten:…"] * 3  # equal names stay equal
    assert all(c.startswith("aten::") and ELLIPSIS in c for c in cut_names(ATTENTION, 20))


def test_empty_and_repeated_columns_give_their_room_to_the_name():
    columns = [Column("name"), Column("nested", True), Column("total ms", True), Column("copy ms", True),
               Column("max ms", True, drop=1)]
    cells = [["aten::" + "a" * 30, "0", "1.000", "1.000", "2.0"],
             ["aten::" + "b" * 30, "0.000", "3.000", "3.000", "4.0"]]
    fit = fit_table(columns, cells, 50)
    assert fit.shown == [0, 2, 4] and dict(fit.hidden) == {1: "empty", 3: "= total ms"}
    assert fit.note(columns) == "hidden: nested (empty); copy ms (= total ms)"
    narrow = fit_table(columns, cells, 40)
    assert narrow.shown == [0, 2] and (4, "no room") in narrow.hidden  # dropped for the name's room
    assert 1 + sum(narrow.widths) + 2 * (len(narrow.widths) - 1) <= 40
    assert len({narrow.cell(r, 0, cells[r][0]) for r in range(2)}) == 2
