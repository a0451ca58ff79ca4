"""Gradient cases (and reasons for none) for the MXNet ops of kiln/mx/ops/sequence.py and
kiln/mx/ops/math.py, merged into test_mxnet_ops_grad's tables."""
P = {"pos": True}

CASES = {
    "broadcast_hypot": ([(2, 3), (2, 1)], {}),
    "erf": ([(5,)], {}),
    "gamma": ([(5,)], {}, P),
    "gammaln": ([(5,)], {}, P),
    "rcbrt": ([(5,)], {}, P),
    "norm": ([(2, 3)], {"axis": 1}),
    "softmin": ([(2, 4)], {}),
    "hard_sigmoid": ([(6,)], {}),
    "khatri_rao": ([(2, 3), (4, 3)], {}),
    "slice_like": ([(4, 5), (2, 3)], {}),
    "SwapAxis": ([(2, 3, 4)], {"dim1": 0, "dim2": 2}),
    "broadcast_axis": ([(1, 3)], {"axis": 0, "size": 2}),
    "Pad": ([(1, 1, 3, 4)], {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 1, 2, 2)}),
    "LRN": ([(1, 4, 2, 2)], {"nsize": 3, "alpha": 0.1}, P),
    "depth_to_space": ([(1, 4, 2, 3)], {"block_size": 2}),
    "space_to_depth": ([(1, 2, 4, 2)], {"block_size": 2}),
    "GroupNorm": ([(2, 4, 3), (2,), (2,)], {"num_groups": 2}),
    "MakeLoss": ([(2, 3)], {}),
    "im2col": ([(1, 2, 4, 5)], {"kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)}),
    "col2im": ([(1, 12, 10)], {"output_size": (4, 5), "kernel": (2, 3), "stride": (1, 2),
                               "pad": (1, 0)}),
    "Crop": ([(1, 1, 5, 5)], {"h_w": (2, 3), "center_crop": True}),
    "amp_cast": ([(3,)], {"dtype": "float64"}),
    "GridGenerator": ([(2, 6)], {"transform_type": "affine", "target_shape": (3, 4)}),
    "BilinearSampler": ([(1, 2, 3, 4), (1, 2, 3, 3)], {}),
    "SpatialTransformer": ([(1, 2, 3, 4), (1, 6)], {"target_shape": (2, 3)}),
    "Correlation": ([(1, 2, 4, 4), (1, 2, 4, 4)], {"kernel_size": 1, "max_displacement": 1,
                                                   "pad_size": 1}),
    # one GRU layer, 2 inputs, state size 2: 3 gates * 2 * (2 + 2) weights + 2 * 3 * 2 biases
    "RNN": ([(3, 2, 2), (36,), (1, 2, 2)], {"state_size": 2, "mode": "gru", "num_layers": 1}),
}

_LENGTHS = "integer lengths input; the data gradient is checked in test_nd_legacy_names.py"
NOT_DIFFERENTIABLE = {
    "SequenceMask": _LENGTHS, "SequenceLast": _LENGTHS, "SequenceReverse": _LENGTHS,
    "erfinv": "defined on (-1, 1) only; its primitive's gradient is in test_grad_registry",
    "batch_take": "integer indices (values in test_nd_legacy_names.py)",
    "argmax_channel": "integer-valued", "shape_array": "integer-valued",
    "size_array": "integer-valued",
    "ROIPooling": "box input (npx.roi_pooling's tests check its gradient)",
    "LogisticRegressionOutput": "MXNet's gradient rule, not a derivative (test_nd_legacy_names.py)",
    "MAERegressionOutput": "MXNet's gradient rule, not a derivative (test_nd_legacy_names.py)",
    "SVMOutput": "MXNet's gradient rule, not a derivative (test_nd_helpers.py)",
    "softmax_cross_entropy": "integer labels (values and gradient in test_nd_legacy_names.py)",
    "scatter_nd": "integer indices (values and gradient in test_nd_legacy_names.py)",
    "ravel_multi_index": "integer-valued", "unravel_index": "integer-valued",
    "choose_element_0index": "integer indices (it is pick)",
    "fill_element_0index": "integer indices (values in test_nd_legacy_names.py)",
    "all_finite": "a 0/1 flag", "multi_all_finite": "a 0/1 flag",
    "multi_sum_sq": "float32 sums of squares for AMP checks",
    "DeformableConvolution": "floor() of the offsets: kinks (test_nd_deformable.py checks "
                             "gradients away from pixel edges)",
    "ModulatedDeformableConvolution": "as DeformableConvolution (test_nd_deformable.py)",
    "CTCLoss": "integer labels (loss and gradient against PyTorch in test_nd_ctc.py)",
    "moments": "two outputs (this test reads one); gradient checked in test_nd_legacy_names.py",
    "broadcast_mod": "piecewise; the mod primitive's gradient is in test_grad_registry",
}
for _name in ("broadcast_equal broadcast_not_equal broadcast_greater broadcast_greater_equal "
              "broadcast_lesser broadcast_lesser_equal broadcast_logical_and "
              "broadcast_logical_or broadcast_logical_xor").split():
    NOT_DIFFERENTIABLE[_name] = "a comparison: 0/1 values"

# the image operators (kiln/mx/ops/image.py); random flips with p=1 always flip
CASES.update({
    "_image_normalize": ([(3, 4, 5)], {"mean": (0.1, 0.2, 0.3), "std": (1.0, 2.0, 0.5)}),
    "_image_flip_left_right": ([(4, 5, 3)], {}),
    "_image_flip_top_bottom": ([(2, 4, 5, 3)], {}),
    "_image_random_flip_left_right": ([(4, 5, 3)], {"p": 1.0}),
    "_image_random_flip_top_bottom": ([(4, 5, 3)], {"p": 1.0}),
    "_image_crop": ([(5, 4, 3)], {"x": 1, "y": 1, "width": 2, "height": 3}),
})
NOT_DIFFERENTIABLE["_image_to_tensor"] = ("its result is float32 whatever the input, as in "
                                           "MXNet: too coarse for a float64 finite difference")
