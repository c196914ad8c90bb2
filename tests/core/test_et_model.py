"""ET argument decoding: type strings, tensors, nested lists, missing shapes/strides."""

from __future__ import annotations

from tracetui.et.model import ETTensor, build_args, make_arg, split_type


def test_split_type() -> None:
    assert split_type("Tensor(float)") == ("Tensor", "float", ())
    assert split_type("Tensor(c10::BFloat16)") == ("Tensor", "c10::BFloat16", ())
    assert split_type("Int") == ("Int", "", ())
    assert split_type("GenericList[]") == ("GenericList", "", ())
    assert split_type("GenericList[Tensor(float),Int]") == ("GenericList", "", ("Tensor(float)", "Int"))
    assert split_type("GenericList[GenericList[Tensor(float),Tensor(float)],Int]") == (
        "GenericList",
        "",
        ("GenericList[Tensor(float),Tensor(float)]", "Int"),
    )
    assert split_type("Tuple[String,String]") == ("Tuple", "", ("String", "String"))


def test_tensor_arg() -> None:
    arg = make_arg("Tensor(long)", [6, 7, 4, 10, 8, "cuda:1"], [2, 5], [5, 1])
    assert arg.value == ETTensor(6, 7, 4, 10, 8, "cuda:1", (2, 5), (5, 1), "long")
    assert arg.value.nbytes == 80
    assert arg.shape == (2, 5) and arg.stride == (5, 1)


def test_tensor_type_with_odd_values_keeps_the_raw_value() -> None:
    assert make_arg("Tensor(float)", "<None>", [], None).value is None
    assert make_arg("Tensor(float)", [1, 2], [3], None).value == [1, 2]
    assert make_arg("Tensor", [1, 2, 0, 4, 4], None, None).value == ETTensor(1, 2, 0, 4, 4, "", None, None, "")


def test_generic_list_with_more_values_than_types() -> None:
    # one element type for a longer list: it applies to every element
    arg = make_arg("GenericList[Int]", [1, 2, 3], [[], [], []], None)
    assert [(a.type, a.value) for a in arg.value] == [("Int", 1), ("Int", 2), ("Int", 3)]
    # several types but too few: the extra elements get an empty type, values kept
    arg = make_arg("Tuple[Int,String]", [1, "a", 2.5], None, None)
    assert [(a.type, a.value) for a in arg.value] == [("Int", 1), ("String", "a"), ("", 2.5)]


def test_build_args_tolerates_short_or_missing_lists() -> None:
    args = build_args([1, [9, 9, 0, 1, 4, "cpu"]], None, ["Int"], None)
    assert [a.type for a in args] == ["Int", ""]
    assert args[1].value == [9, 9, 0, 1, 4, "cpu"]  # no type: not decoded as a tensor
    assert build_args(None, None, None, None) == []
    args = build_args([[5, 6, 0, 2, 4, "cpu"]], [[2]], ["Tensor(float)"], [])
    assert args[0].value.stride is None and args[0].value.shape == (2,)
