"""`mxnet.registry`: name -> class tables with which MXNet-style libraries make their own
`register` / `alias` / `create` factories (as MXNet 1.x's optimizers, initializers and
metrics do). One table per base class; names are case-insensitive."""
import json
import warnings

from kiln._core.base import KilnError

_REGISTRY = {}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the name -> class table of `base_class`."""
    return _table(base_class).copy()


def get_register_func(base_class, nickname):
    """A decorator `register(klass, name=None)` adding subclasses of `base_class` to its table
    (under `name` or the class name, lower-cased; a later class of the same name wins, with a
    warning)."""
    registry = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise KilnError(f"{nickname}.register: expected a subclass of "
                            f"{base_class.__name__}, got {klass!r}")
        name = (name or klass.__name__).lower()
        if name in registry and registry[name] is not klass:
            old = registry[name]
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered with "
                          f"name {name} is overriding existing {nickname} "
                          f"{old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
        registry[name] = klass
        return klass
    register.__doc__ = f"Register {nickname} to the {nickname} factory"
    return register


def get_alias_func(base_class, nickname):
    """A decorator factory `alias(*names)` registering one class under several names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class, nickname):
    """`create(name_or_instance_or_config, *args, **kwargs)`: an instance of the class
    registered under a name (also given as a dict, or JSON '["name", {kwargs}]' /
    '{"nickname": name, ...}'); an instance of `base_class` is returned as it is."""
    registry = _table(base_class)

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise KilnError(f"{nickname}.create: expected a name or an instance, got none")
        if isinstance(name, base_class):
            if args or kwargs:
                raise KilnError(f"{nickname}.create: {nickname} is already an instance; "
                                f"extra arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise KilnError(f"{nickname}.create: expected a str, dict or {base_class.__name__}"
                            f", got {type(name).__name__}")
        if name.startswith("["):
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            return create(**json.loads(name))
        name = name.lower()
        if name not in registry:
            raise KilnError(f"{nickname}.create: {name!r} is not registered; known: "
                            f"{', '.join(sorted(registry))}")
        return registry[name](*args, **kwargs)
    create.__doc__ = f"Create a {nickname} instance from a name, config or instance."
    return create
