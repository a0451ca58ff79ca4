"""The machinery of evaluation metrics: EvalMetric (local and global windows), the registry
that `create` and the `register`/`alias` decorators fill, CompositeEvalMetric, Loss and
CustomMetric (with `np`, which wraps a NumPy function as a metric)."""
import inspect
import json

import numpy as _np

from ..._core.base import KilnError


_REGISTRY = {}


def _register(*aliases):
    def wrap(cls):
        for name in (cls.__name__,) + aliases:
            _REGISTRY[name.lower()] = cls
        return cls
    return wrap


def _host(x):
    return x.asnumpy() if hasattr(x, "asnumpy") else _np.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """The same number of labels and predictions (or shapes with shape=True); with wrap,
    a single array becomes a one-element list."""
    if wrap:
        labels = labels if isinstance(labels, (list, tuple)) else [labels]
        preds = preds if isinstance(preds, (list, tuple)) else [preds]
    got = (_np.shape(labels), _np.shape(preds)) if shape else (len(labels), len(preds))
    if got[0] != got[1]:
        raise KilnError(f"metric: shape of labels {got[0]} does not match shape of "
                        f"predictions {got[1]}")
    return labels, preds


def _name_value(name, value):
    """[(name, value), ...] from a metric's get(): one pair, or a composite's lists."""
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values))


class EvalMetric:
    """The base class of metrics: `update(labels, preds)` accumulates a batch, `get()` gives (name,
    value), `reset()` starts again."""
    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def reset(self):
        self.num_inst = 0
        self.sum_metric = 0.0
        self._done_inst, self._done_sum = 0, 0.0

    def reset_local(self):
        """Start a new local window (Speedometer's auto_reset); the global value, which
        Module.fit logs at the end of an epoch, keeps counting since reset()."""
        self._done_inst += self.num_inst
        self._done_sum += self.sum_metric
        self.num_inst, self.sum_metric = 0, 0.0

    def get_global(self):
        local = self.num_inst, self.sum_metric
        self.num_inst, self.sum_metric = local[0] + self._done_inst, local[1] + self._done_sum
        try:
            return self.get()
        finally:
            self.num_inst, self.sum_metric = local

    def get_global_name_value(self):
        return _name_value(*self.get_global())

    def get_config(self):
        """The arguments that make this metric again (MXNet 1.x): `create(json.dumps(config))`
        or `create(config.pop('metric'), **config)`. Every constructor argument the metric
        keeps as an attribute of the same name is included."""
        config = dict(self._kwargs)
        for param in list(inspect.signature(type(self).__init__).parameters)[1:]:
            if param not in ("name", "output_names", "label_names") and hasattr(self, param):
                config[param] = getattr(self, param)
        config.update(metric=type(self).__name__, name=self.name,
                      output_names=self.output_names, label_names=self.label_names)
        return config

    def update(self, labels, preds):
        raise NotImplementedError

    def update_dict(self, label, pred):
        preds = ([pred[n] for n in self.output_names] if self.output_names is not None
                 else list(pred.values()))
        labels = ([label[n] for n in self.label_names] if self.label_names is not None
                  else list(label.values()))
        self.update(labels, preds)

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_name_value(self):
        return _name_value(*self.get())

    def _pairs(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        return [(_host(lab), _host(pred)) for lab, pred in zip(labels, preds)]


@_register("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; `get()` gives their names and values as two lists."""
    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        self.metrics = [create(m) for m in metrics or []]
        super().__init__(name, output_names, label_names)

    def add(self, metric):
        self.metrics.append(create(metric))

    def get_metric(self, index):
        return self.metrics[index]

    def update(self, labels, preds):
        for m in self.metrics:
            m.update(labels, preds)

    def reset(self):
        for m in getattr(self, "metrics", ()):
            m.reset()

    def reset_local(self):
        for m in self.metrics:
            m.reset_local()

    def get(self, which="get"):
        names, values = [], []
        for m in self.metrics:
            name, value = getattr(m, which)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get_global(self):
        return self.get("get_global")

    def get_config(self):
        """The composite's config, with each of its metrics' configs (MXNet 1.x)."""
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


@_register()
class Loss(EvalMetric):
    """The mean of loss values handed in as predictions (labels are ignored)."""
    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def update(self, _, preds):
        for pred in preds if isinstance(preds, (list, tuple)) else [preds]:
            value = _host(pred)
            self.sum_metric += float(value.sum())
            self.num_inst += value.size


@_register("custom")
class CustomMetric(EvalMetric):
    """feval(label, pred) -> value, or (sum, count), on NumPy copies."""
    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        super().__init__(name or getattr(feval, "__name__", "custom"), output_names,
                         label_names)
        self._feval = feval

    def update(self, labels, preds):
        for label, pred in self._pairs(labels, preds):
            value = self._feval(label, pred)
            if isinstance(value, tuple):
                self.sum_metric += value[0]
                self.num_inst += value[1]
            else:
                self.sum_metric += value
                self.num_inst += 1


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a function of NumPy arrays (MXNet's mx.metric.np)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


def create(metric, *args, **kwargs):
    """A metric from a name ('acc', 'rmse', ...), an instance, a list, or a function."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        return CompositeEvalMetric([create(m, *args, **kwargs) for m in metric])
    if isinstance(metric, str) and metric.lstrip().startswith("{"):    # a get_config()
        metric = json.loads(metric)
    if isinstance(metric, dict):
        config = dict(metric)
        return create(config.pop("metric"), *args, **{**config, **kwargs})
    cls = _REGISTRY.get(str(metric).lower())
    if cls is None:
        raise KilnError(f"metric.create: unknown metric {metric!r}; known: "
                        f"{sorted(_REGISTRY)}")
    return cls(*args, **kwargs)


def register(klass):
    """Class decorator: make a custom EvalMetric creatable by its lower-cased name."""
    return _register()(klass)


def alias(*aliases):
    """Class decorator: make a metric creatable by these names too (and its own)."""
    return _register(*aliases)
