"""NumPy references of the AMP kernels against straightforward per-tensor NumPy / PyTorch computations.

These run on the CPU in CI. The references are what the CUDA kernels must
reproduce bit for bit (tests/test_kernels_gpu.py checks that on a GPU), so
here they are held against the plain math they claim to implement.
"""

import ml_dtypes
import numpy as np
import pytest

from cupynet.amp import kernels as K
from cupynet.amp.kernels import reference
from cupynet.cuda import reference as common
from cupynet.cuda.multi_tensor import BLOCK_THREADS, CHUNK_SIZE, TableCache, build_host_table

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BOUNDARIES = (CHUNK_SIZE - 1, CHUNK_SIZE)  # the last element of chunk 0, the first of chunk 1


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize]).copy()


def random_array(rng, size, dtype, scale=4.0):
    return (rng.standard_normal(size) * scale).astype(np.float32).astype(dtype)


def plain_unscale(a, inv):
    """The straightforward per-tensor computation: widen, multiply, round back."""
    return (a.astype(np.float32) * np.float32(inv)).astype(a.dtype)


def scalars(found=0.0, inv=1.0):
    return np.array([found], np.float32), np.array([inv], np.float32)


# ---------------------------------------------------------------- conversions


def test_store_rounds_like_torch_and_ml_dtypes_on_every_kind_of_value():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x477FEFFF, 0x477FF000, 0x7F7FFFFF,
                        0x7F800000, 0xFF800000, 0x33000000, 0x33000001, 0x3F808000, 0x3F818000], np.uint32)
    values = np.concatenate([patterns, special]).view(np.float32)
    finite = values[~np.isnan(values)]
    with np.errstate(over="ignore"):
        assert np.array_equal(bits(common.store_f32(finite, F16)), bits(torch.from_numpy(finite).half().numpy()))
    expected_bf16 = torch.from_numpy(finite).bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bits(common.store_f32(finite, BF16)), expected_bf16)
    assert np.array_equal(bits(common.store_f32(finite, BF16)), bits(finite.astype(BF16)))


def test_store_canonicalises_nan_and_load_is_exact():
    nans = np.array([0x7FC00001, 0xFFC00000, 0x7F800001], np.uint32).view(np.float32)
    assert bits(common.store_f32(nans, F32)).tolist() == [0x7FC00000] * 3
    assert bits(common.store_f32(nans, F16)).tolist() == [0x7E00] * 3
    assert bits(common.store_f32(nans, BF16)).tolist() == [0x7FC0] * 3
    every_half = np.arange(2**16, dtype=np.uint16)
    for dtype in (F16, BF16):
        a = every_half.view(dtype)
        ok = ~np.isnan(a.astype(np.float32))
        assert np.array_equal(common.load_f32(a)[ok], a.astype(np.float32)[ok])


# ---------------------------------------------------------------- unscale


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_unscale_matches_plain_math_across_chunk_boundaries(dtype):
    rng = np.random.default_rng(1)
    arrays = [random_array(rng, n, dtype) for n in (0, 1, 7, CHUNK_SIZE + 3)]
    expected = [plain_unscale(a, 1 / 1024) for a in arrays]
    found, inv = scalars(inv=1 / 1024)
    stats = np.zeros((4, 2), np.int32)
    K.non_finite_check_and_unscale_(arrays, found, inv, stats)
    for a, e in zip(arrays, expected):
        assert np.array_equal(bits(a), bits(e))
    assert found[0] == 0.0 and not stats.any()


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_planted_inf_and_nan_at_chunk_boundaries_are_found_and_counted(dtype):
    rng = np.random.default_rng(2)
    a = random_array(rng, 2 * CHUNK_SIZE + 5, dtype)
    last = a.size - 1
    a[BOUNDARIES[0]], a[BOUNDARIES[1]], a[last] = np.inf, -np.inf, np.nan
    clean = random_array(rng, 33, dtype)
    expected = plain_unscale(a, 0.25)
    found, inv = scalars(inv=0.25)
    stats = np.array([[5, 7], [0, 0]], np.int32)  # counts are ADDED to what is there
    K.non_finite_check_and_unscale_([a, clean], found, inv, stats)
    assert found[0] == 1.0
    assert stats.tolist() == [[5 + 2, 7 + 1], [0, 0]]
    assert a[BOUNDARIES[0]] == np.inf and a[BOUNDARIES[1]] == -np.inf and np.isnan(a[last])
    assert bits(a)[last] == common.CANONICAL_NAN_BITS[dtype]
    ok = np.isfinite(a.astype(np.float32))
    assert np.array_equal(bits(a)[ok], bits(expected)[ok])


def test_each_planted_position_alone_sets_found_inf():
    for position in (*BOUNDARIES, 2 * CHUNK_SIZE - 1):
        a = np.ones(2 * CHUNK_SIZE, np.float16)
        a[position] = np.nan
        found, inv = scalars()
        K.non_finite_check_and_unscale_([a], found, inv)
        assert found[0] == 1.0, position


def test_found_inf_is_never_cleared_and_a_clean_call_leaves_it_zero():
    found, inv = scalars(found=1.0, inv=0.5)
    K.non_finite_check_and_unscale_([np.ones(10, np.float32)], found, inv)
    assert found[0] == 1.0
    found, inv = scalars(found=0.0, inv=0.5)
    K.non_finite_check_and_unscale_([np.ones(10, np.float32)], found, inv)
    assert found[0] == 0.0


def test_inv_scale_one_leaves_bits_identical_even_nan_payloads_and_subnormals():
    a = np.array([0x7FC00123, 0xFFC00000, 0x00000001, 0x80000000, 0x3F800001], np.uint32).view(np.float32)
    h = np.array([0x7E01, 0x0001, 0x8000], np.uint16).view(np.float16)
    before = [bits(a), bits(h)]
    found, inv = scalars(inv=1.0)
    K.non_finite_check_and_unscale_([a, h], found, inv)
    assert np.array_equal(bits(a), before[0]) and np.array_equal(bits(h), before[1])
    assert found[0] == 1.0


def test_subnormals_are_kept_not_flushed():
    # NOTE: the kernels are FTZ-immune (inline PTX), so the reference keeps IEEE subnormals
    a = np.array([0x00800000, 0x00000006, 0x00000003], np.uint32).view(np.float32)
    b = np.array([0x0010, 0x8001], np.uint16).view(BF16)
    found, inv = scalars(inv=0.5)
    K.non_finite_check_and_unscale_([a, b], found, inv)
    assert bits(a).tolist() == [0x00400000, 0x00000003, 0x00000002]  # 1.5 ulp: the tie goes to even
    assert bits(b).tolist() == [0x0008, 0x8000]


def test_mixed_dtypes_in_one_call_count_rows_by_index():
    arrays = [np.array([1, np.inf], np.float16), np.array([np.nan, 2], np.float32),
              np.array([3, 4], BF16), np.array([np.nan, -np.inf], np.float16)]
    stats = np.zeros((4, 2), np.int32)
    found, inv = scalars(inv=2.0)
    K.non_finite_check_and_unscale_(arrays, found, inv, stats)
    assert stats.tolist() == [[1, 0], [0, 1], [0, 0], [1, 1]]
    assert arrays[2].astype(np.float32).tolist() == [6, 8] and arrays[0][0] == 2


def test_empty_inputs_are_fine():
    found, inv = scalars(inv=0.5)
    K.non_finite_check_and_unscale_([], found, inv)
    K.non_finite_check_and_unscale_([np.zeros(0, np.float16), np.zeros((0, 3), np.float32)], found, inv,
                                    np.zeros((2, 2), np.int32))
    assert found[0] == 0.0
    zero_d = np.array(0.0, np.float32)
    K.non_finite_check_and_unscale_([np.array([np.inf], np.float32)], zero_d, np.array(0.5, np.float32))
    assert zero_d == 1.0


def test_transposed_input_is_rejected_naming_index_and_shape_and_nothing_changes():
    good = np.ones(4, np.float32)
    bad = np.full((3, 2), np.inf, np.float32).T
    found, inv = scalars(inv=0.5)
    with pytest.raises(ValueError, match=r"non_finite_check_and_unscale_: arrays\[1\] with shape \(2, 3\).*"
                                         "not contiguous"):
        K.non_finite_check_and_unscale_([good, bad], found, inv)
    assert good.tolist() == [1, 1, 1, 1] and found[0] == 0.0
    with pytest.raises(ValueError, match=r"arrays\[0\] with shape \(2,\)"):
        K.non_finite_check_and_unscale_([np.ones(4, np.float32)[::2]], found, inv)


@pytest.mark.parametrize("call, error, message", [
    (lambda f, i: K.non_finite_check_and_unscale_([np.ones(2)], f, i), TypeError, r"arrays\[0\] has dtype float64"),
    (lambda f, i: K.non_finite_check_and_unscale_(np.ones(2, np.float32), f, i), TypeError, "list or tuple"),
    (lambda f, i: K.non_finite_check_and_unscale_([[1.0]], f, i), TypeError, "numpy or cupy array"),
    (lambda f, i: K.non_finite_check_and_unscale_([], np.zeros(2, np.float32), i), ValueError, "found_inf must be"),
    (lambda f, i: K.non_finite_check_and_unscale_([], f, np.ones(1)), ValueError, "inv_scale must be a float32"),
    (lambda f, i: K.non_finite_check_and_unscale_([np.ones(2, np.float32)], f, i, np.zeros((2, 2), np.int32)),
     ValueError, r"tensor_stats must be .* shape \(1, 2\)"),
])
def test_bad_arguments_are_clear_errors(call, error, message):
    found, inv = scalars(inv=0.5)
    with pytest.raises(error, match=message):
        call(found, inv)
    assert found[0] == 0.0


def test_the_same_array_twice_is_rejected_before_any_write():
    a = np.ones(3, np.float32)
    found, inv = scalars(inv=0.5)
    with pytest.raises(ValueError, match=r"arrays\[1\] is the same memory as arrays\[0\]"):
        K.non_finite_check_and_unscale_([a, a], found, inv)
    assert a.tolist() == [1, 1, 1]


# ---------------------------------------------------------------- l2norm


def shuffle_tree(lanes):
    """Lane 0 of warp_sum_f32, literally: lane i adds lane i + offset (its own value if out of range)."""
    lanes = list(lanes)
    for offset in (16, 8, 4, 2, 1):
        lanes = [np.float32(lanes[i] + (lanes[i + offset] if i + offset < 32 else lanes[i])) for i in range(32)]
    return lanes[0]


def literal_block_sum(values):
    """One block of l2norm.cu, literally: thread t adds values t, t + 256, ... then the two shuffle trees."""
    acc = [np.float32(0)] * BLOCK_THREADS
    for i, v in enumerate(values):
        acc[i % BLOCK_THREADS] = np.float32(acc[i % BLOCK_THREADS] + v)
    warps = [shuffle_tree(acc[w * 32:(w + 1) * 32]) for w in range(BLOCK_THREADS // 32)]
    return shuffle_tree(warps + [np.float32(0)] * (32 - len(warps)))


def test_l2norm_replays_the_kernel_summation_order_bit_for_bit():
    rng = np.random.default_rng(3)
    wide = lambda n, d: (rng.lognormal(0, 4, n) * rng.choice([-1, 1], n)).astype(np.float32).astype(d)  # noqa: E731
    arrays = [wide(CHUNK_SIZE + 77, F32), wide(300, F16), wide(1, F32), wide(513, BF16)]
    partials = {}
    for i, a in enumerate(arrays):
        v = a.astype(np.float32)
        literal = [literal_block_sum(v[s:s + CHUNK_SIZE] * v[s:s + CHUNK_SIZE]) for s in range(0, v.size, CHUNK_SIZE)]
        assert bits(reference._chunk_partials(a)).tolist() == bits(np.array(literal, np.float32)).tolist()
        partials[i] = literal
    in_group_order = partials[0] + partials[2] + partials[1] + partials[3]  # float32 group, float16, bfloat16
    expected = np.sqrt(literal_block_sum(in_group_order))
    assert bits(K.multi_tensor_l2norm(arrays))[0] == bits(np.float32(expected))


def test_l2norm_matches_float64_math():
    rng = np.random.default_rng(4)
    arrays = [random_array(rng, n, d) for n, d in ((2 * CHUNK_SIZE + 1, F32), (5, F16), (CHUNK_SIZE, BF16),
                                                   (0, F32))]
    expected = np.sqrt(sum((a.astype(np.float64) ** 2).sum() for a in arrays))
    out = K.multi_tensor_l2norm(arrays)
    assert out.dtype == np.float32 and out.shape == (1,)
    np.testing.assert_allclose(out[0], expected, rtol=1e-5)
    assert bits(K.multi_tensor_l2norm(arrays)) == bits(out)  # deterministic


def test_l2norm_of_nothing_is_zero_and_non_finite_propagates():
    assert K.multi_tensor_l2norm([]).tolist() == [0.0]
    assert K.multi_tensor_l2norm([np.zeros(0, np.float16)]).tolist() == [0.0]
    with_inf = [np.ones(CHUNK_SIZE + 1, np.float32), np.array([np.inf], np.float16)]
    assert K.multi_tensor_l2norm(with_inf)[0] == np.inf
    with_nan = [np.array([np.inf, np.nan], np.float32)]
    assert bits(K.multi_tensor_l2norm(with_nan))[0] == 0x7FC00000
    big = np.full(4, 6e4, np.float16)  # NOTE: squares overflow fp16 but not the fp32 accumulator
    assert K.multi_tensor_l2norm([big])[0] == np.float32(1.2e5)


def test_l2norm_bad_inputs():
    with pytest.raises(ValueError, match=r"multi_tensor_l2norm: arrays\[0\] .* not contiguous"):
        K.multi_tensor_l2norm([np.ones((3, 3), np.float32)[:, 0]])
    with pytest.raises(TypeError, match=r"multi_tensor_l2norm: arrays\[1\] has dtype int32"):
        K.multi_tensor_l2norm([np.ones(2, np.float32), np.ones(2, np.int32)])


# ---------------------------------------------------------------- chunk tables


def test_chunk_table_layout():
    sizes = [0, 1, CHUNK_SIZE, CHUNK_SIZE + 1]
    table, n_chunks = build_host_table([[10, 11, 12, 13], [20, 21, 22, 23]], sizes)
    assert n_chunks == 4 and table.dtype == np.int64
    assert table[:8].tolist() == [10, 11, 12, 13, 20, 21, 22, 23] and table[8:12].tolist() == sizes
    assert [(d >> 32, d & 0xFFFFFFFF) for d in table[12:].tolist()] == [(1, 0), (2, 0), (3, 0), (3, 1)]
    _, none = build_host_table([[]], [])
    assert none == 0


def test_table_cache_builds_once_per_key_and_evicts_least_recent():
    cache, built = TableCache(capacity=2), []

    def build(tag):
        return lambda: built.append(tag) or tag

    assert cache.get("a", build("a")) == "a" and cache.get("a", build("a2")) == "a"
    cache.get("b", build("b"))
    cache.get("c", build("c"))  # evicts "a"
    cache.get("a", build("a3"))
    assert built == ["a", "b", "c", "a3"] and (cache.hits, cache.misses) == (1, 4) and len(cache) == 2


# ---------------------------------------------------------------- update_scale


def scaler_state(scale, tracker=0, hyst=0):
    return (np.array([scale], np.float32), np.array([tracker], np.int32), np.array([hyst], np.int32),
            np.zeros(1, np.int32))


def step_scale(state, found, **kw):
    scale, tracker, hyst, hit = state
    K.update_scale_(scale, tracker, np.array([found], np.float32), kw.pop("growth", 2.0), kw.pop("backoff", 0.25),
                    kw.pop("interval", 2), hysteresis_tracker=hyst, min_hit=hit, **kw)
    return float(scale[0]), int(tracker[0])


def test_update_scale_pytorch_scenario():
    state = scaler_state(4.0)
    assert [step_scale(state, f) for f in (0.0, 0.0, 1.0)] == [(4.0, 1), (8.0, 0), (2.0, 0)]


def test_update_scale_matches_torch_bit_for_bit():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    ours = np.array([3.3e4], np.float32), np.zeros(1, np.int32)
    theirs = torch.tensor([3.3e4]), torch.zeros(1, dtype=torch.int32)
    for found in (rng.random(60) < 0.3).astype(np.float32):
        K.update_scale_(ours[0], ours[1], np.array([found], np.float32), 1.7, 0.3, 3)
        torch._amp_update_scale_(theirs[0], theirs[1], torch.tensor([float(found)]), 1.7, 0.3, 3)
        assert bits(ours[0]) == bits(theirs[0].numpy()) and ours[1][0] == theirs[1][0]


def test_huge_scale_never_grows_to_inf():
    state = scaler_state(1e38)
    assert step_scale(state, 0.0, growth=16.0, interval=1) == (np.float32(1e38), 0)
    assert np.isfinite(state[0][0])


def test_hysteresis_backs_off_after_consecutive_overflows_only():
    state = scaler_state(1024.0)
    seq = [step_scale(state, f, hysteresis=3, interval=100) + (int(state[2][0]),) for f in (1, 1, 0, 1, 1, 1, 1)]
    # two overflows, a clean step resets the count, then three in a row back off once, the 4th counts anew
    assert seq == [(1024, 0, 1), (1024, 0, 2), (1024, 1, 0), (1024, 0, 1), (1024, 0, 2), (256, 0, 0), (256, 0, 1)]


def test_min_and_max_scale_clamp_and_min_hit_is_reported():
    state = scaler_state(10.0)
    assert step_scale(state, 1.0, min_scale=4.0) == (4.0, 0) and state[3][0] == 1
    state = scaler_state(10.0)
    assert step_scale(state, 1.0, min_scale=2.5) == (2.5, 0) and state[3][0] == 0  # exactly the bound: no hit
    state = scaler_state(100.0, tracker=1)
    assert step_scale(state, 0.0, max_scale=150.0) == (150.0, 0)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"growth_factor": 1.0}, ValueError, r"invalid growth_factor 1.0; expected a finite number in \(1.0, inf\)"),
    ({"backoff_factor": 1.0}, ValueError, "invalid backoff_factor 1.0"),
    ({"growth_interval": 0}, ValueError, "invalid growth_interval 0"),
    ({"growth_interval": 2.0}, TypeError, "growth_interval must be an int"),
    ({"hysteresis": 2}, ValueError, "hysteresis=2 needs a hysteresis_tracker"),
    ({"min_scale": 8.0, "max_scale": 4.0}, ValueError, "min_scale 8.0 must be a float32 value <= max_scale"),
    ({"scale": np.array([4.0])}, ValueError, "scale must be a float32 array of shape"),
    ({"growth_tracker": np.zeros(2, np.int32)}, ValueError, r"growth_tracker must be an int32 .* got int32 array of "
                                                            r"shape \(2,\)"),
])
def test_update_scale_bad_arguments_leave_state_untouched(kwargs, error, message):
    args = {"scale": np.array([4.0], np.float32), "growth_tracker": np.array([1], np.int32),
            "found_inf": np.array([1.0], np.float32), "growth_factor": 2.0, "backoff_factor": 0.5,
            "growth_interval": 2}
    args.update(kwargs)
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    with pytest.raises(error, match=f"update_scale_: {message}"):
        K.update_scale_(**args)  # found_inf is set: a call that went through would back off
    assert all(np.array_equal(args[k], v) for k, v in before.items())


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("inv", [0.25, 3.0e10, 0.0, np.inf, np.nan])
def test_fast_finite_path_gives_the_general_paths_bits(dtype, inv):
    # NOTE: all-finite arrays skip the counting pass (float32: a BLAS sum of squares clears them), huge
    # finite float32 values overflow that sum and take the counting path: both must equal plain math
    rng = np.random.default_rng(7)
    arrays = [(rng.standard_normal(n) * 100).astype(dtype) for n in (0, 1, 1000, 70000)]
    if dtype == F32:
        arrays.append(np.array([3e20, -1e30, 1.0, 2e-45], np.float32))
    found, stats = np.zeros(1, np.float32), np.zeros((len(arrays), 2), np.int32)
    with np.errstate(all="ignore"):
        expected = [common.store_f32(common.load_f32(a) * np.float32(inv), a.dtype) for a in arrays]
        K.non_finite_check_and_unscale_(arrays, found, np.full(1, inv, np.float32), stats)
    assert found[0] == 0.0 and not stats.any()
    for got, want in zip(arrays, expected):
        np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.view(np.uint8))


def test_two_views_of_the_same_memory_are_rejected_but_disjoint_views_are_not():
    # NOTE: check_distinct groups arrays by the owner of their memory and compares data pointers within
    # a group: two view objects starting at the same element are caught, neighbours sharing an owner are not
    base = np.ones(6, np.float32)
    found, inv = scalars(inv=0.5)
    with pytest.raises(ValueError, match=r"arrays\[2\] is the same memory as arrays\[0\]"):
        K.non_finite_check_and_unscale_([base[:3], np.ones(2, np.float32), base[:3]], found, inv)
    assert base.tolist() == [1] * 6
    K.non_finite_check_and_unscale_([base[:3], base[3:]], found, inv)
    assert base.tolist() == [0.5] * 6
