"""mx.mod.Module over several contexts (kiln/mx/mod/executor_group.py): the batch is split
along each input's layout batch axis, gradients are summed over the contexts before the
update, and MXNet's error types, optimizer-state checkpoints and shared executor groups.
Expected values follow MXNet 1.9.1 (checked with it on the same calls)."""
import numpy as np
import pytest

import kiln
from kiln import io as kio, nd, sym
from kiln.mx.mod.executor_group import DataParallelExecutorGroup
from mx_alias_fixture import mx  # noqa: F401


def _fc(num_hidden=20):
    return sym.FullyConnected(sym.var("data"), num_hidden=num_hidden, name="fc")


def test_batch_splits_along_the_layout_batch_axis_and_merges_back():
    relu = sym.Activation(sym.var("data"), act_type="relu", __layout__="TNC")
    mod = kiln.mod.Module(relu, ("data",), None, context=[kiln.cpu(0), kiln.cpu(1)])
    mod.bind(data_shapes=[kio.DataDesc("data", (3, 8, 7), layout="TNC")])
    mod.init_params()
    mod.forward(kio.DataBatch([nd.ones((3, 8, 7))]))
    mod.backward([nd.ones((3, 8, 7))])          # nothing needs a gradient: a no-op
    assert mod.get_outputs()[0].shape == (3, 8, 7)
    assert [x.shape for x in mod.get_outputs(merge_multi_context=False)[0]] == [(3, 4, 7)] * 2


def test_gradients_of_all_contexts_are_summed_before_the_update():
    mod = kiln.mod.Module(_fc(), ("data",), None, context=[kiln.cpu(0), kiln.cpu(1)])
    mod.bind(data_shapes=[("data", (7, 20))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 1})   # rescale_grad = 1/7
    for batch, want in ((7, -1), (14, -3)):          # 14 rows: still rescaled by 1/7
        mod.forward(kio.DataBatch([nd.ones((batch, 20))]))
        mod.backward([nd.ones((batch, 20))])
        mod.update()
        assert mod.get_outputs()[0].shape == (batch, 20)
        assert (mod.get_params()[0]["fc_bias"].asnumpy() == want).all()


def test_input_gradients_follow_data_names_order():
    a, b, c = sym.var("a"), sym.var("b"), sym.var("c")
    net = kiln.mod.Module(a + 2 * b + 3 * c, data_names=["b", "c", "a"], label_names=None,
                          context=[kiln.cpu(0), kiln.cpu(1)])
    net.bind(data_shapes=[["b", (5, 5)], ["c", (5, 5)], ["a", (5, 5)]], inputs_need_grad=True)
    net.init_params()
    net.forward(kio.DataBatch([nd.ones((5, 5))] * 3))
    net.backward(out_grads=[nd.ones((5, 5))])
    assert [g.asnumpy().max() for g in net.get_input_grads()] == [2, 3, 1]


def test_errors_have_mxnets_types():
    mod = kiln.mod.Module(sym.var("data") * 2, ("data",), None)
    with pytest.raises(TypeError):
        mod.bind(data_shapes=[("data", nd.array([10, 10]))])
    assert not mod.binded
    with pytest.raises(ValueError, match="not an argument"):
        kiln.mod.Module(_fc(), data_names=["pixels"])
    fc = kiln.mod.Module(_fc(2), ("data",), None)
    fc.bind(data_shapes=[("data", (1, 2))])
    given = {"fc_weight": nd.ones((2, 2))}
    with pytest.raises(RuntimeError, match="fc_bias"):
        fc.set_params(given, {})                       # missing, allow_missing=False
    with pytest.raises(ValueError, match="fc_extra"):
        fc.set_params({**given, "fc_extra": nd.ones(2)}, {}, allow_missing=True)
    fc.set_params({**given, "fc_extra": nd.ones(2)}, {}, allow_missing=True,
                  allow_extra=True)


def test_optimizer_states_survive_a_checkpoint(tmp_path):
    prefix = str(tmp_path / "m")
    for contexts in ([kiln.cpu(0)], [kiln.cpu(0), kiln.cpu(1)]):
        mod = kiln.mod.Module(_fc(), ("data",), None, context=contexts)
        mod.bind(data_shapes=[("data", (10, 10))])
        mod.init_params()
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        mod.forward(kio.DataBatch([nd.ones((10, 10))]), is_train=True)
        mod.backward([nd.ones((10, 20))])
        mod.update()
        mod.save_checkpoint(prefix, 0, save_optimizer_states=True)
        # one context updates in the module, several in the kvstore (MXNet's choice)
        states = (mod._updater if len(contexts) == 1 else mod._kvstore._updater).states
        back = kiln.mod.Module.load(prefix, 0, load_optimizer_states=True, data_names=("data",),
                                    label_names=None)
        back.bind(data_shapes=[("data", (10, 10))])
        back.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        assert set(states) == set(back._updater.states) and states
        for key, state in states.items():
            np.testing.assert_array_equal(state.asnumpy(), back._updater.states[key].asnumpy())
        assert any(np.abs(s.asnumpy()).sum() > 0 for s in states.values())


def test_shared_group_shares_parameters_and_input_arrays():
    contexts = [kiln.cpu(0), kiln.cpu(1)]
    small = _fc(4)
    big = sym.FullyConnected(small, num_hidden=3, name="fc2")
    shapes = [kio.DataDesc("data", (4, 5))]
    first = DataParallelExecutorGroup(small, contexts, None, shapes, None, ["fc_weight",
                                      "fc_bias"], True, False)
    second = DataParallelExecutorGroup(big, contexts, None, shapes, None, ["fc_weight",
                                       "fc_bias"], True, False, shared_group=first)
    for i in range(2):
        assert second.execs[i].arg_dict["fc_weight"] is first.execs[i].arg_dict["fc_weight"]
        assert second.execs[i].grad_dict["fc_bias"] is first.execs[i].grad_dict["fc_bias"]
        # the arguments that are not parameters of the group live in shared_data_arrays
        assert sorted(first.shared_data_arrays[i]) == ["data", "fc2_bias", "fc2_weight"]
        assert first.execs[i].arg_dict["data"].shape == (2, 5)


def test_bucket_modules_accumulate_into_one_gradient():
    def sym_gen(_):
        weight = sym.var("a", shape=(1,), init=kiln.init.One())
        return sym.make_loss(sym.broadcast_mul(sym.var("data"), weight)), ("data",), None

    mod = kiln.mod.BucketingModule(sym_gen=sym_gen, default_bucket_key=10)
    mod.bind(data_shapes=[["data", (2,)]], grad_req="add")
    mod.init_params()
    for key, want in ((10, 2), (5, 4)):
        mod.forward_backward(kio.DataBatch([nd.ones((2,))], provide_data=[
            kio.DataDesc("data", (2,), layout="N")], bucket_key=key))
        assert mod._curr_module._exec_group.execs[0].grad_dict["a"].asscalar() == want


def test_fit_binds_with_the_iterators_descriptions():
    calls = []

    class Batches:
        provide_data, provide_label = [("data", (1, 2))], None

        def __iter__(self):
            return iter([kio.DataBatch([nd.ones((1, 2))])])

        def reset(self):
            calls.append("reset")

    mod = kiln.mod.BaseModule()
    mod.bind = lambda **kw: calls.append(("bind", kw["data_shapes"]))
    for name in ("init_params", "init_optimizer", "forward", "backward", "update",
                 "update_metric"):
        setattr(mod, name, lambda *a, **kw: None)
    mod.get_params = lambda: (None, None)
    mod.fit(Batches(), num_epoch=1)
    assert calls == [("bind", [("data", (1, 2))]), "reset"]


def test_mxnet_contrib_amp_module_path(mx):  # noqa: F811
    from mxnet.contrib.amp import amp
    assert amp.init is mx.contrib.amp.init


def test_context_default_ctx_is_the_cpu():
    assert kiln.Context.default_ctx == kiln.cpu(0)


def test_ctx_group_arrays_report_their_group_context(mx):
    # MXNet 1.9.1: input gradients of variables made under AttrScope(ctx_group=...) are on
    # group2ctxs[group] (test_module.py's test_module_ctx_group)
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.Variable("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        c = a + mx.sym.Variable("b")
    for group2ctxs in ({"dev1": mx.cpu(1), "dev2": [mx.cpu(2)]},
                       [{"dev1": mx.cpu(1), "dev2": mx.cpu(2)}]):
        mod = mx.mod.Module(c, context=[mx.cpu(0)], data_names=["a", "b"], label_names=None,
                            group2ctxs=group2ctxs)
        mod.bind(data_shapes=[["a", (2, 5)], ["b", (2, 5)]], inputs_need_grad=True)
        mod.init_params()
        mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 5)), mx.nd.ones((2, 5))]),
                    is_train=True)
        mod.backward([mx.nd.ones((2, 5))])
        grads = mod.get_input_grads()
        assert [g.context for g in grads] == [mx.cpu(1), mx.cpu(2)]
        assert (grads[0].asnumpy() == 2).all() and (grads[1].asnumpy() == 1).all()
