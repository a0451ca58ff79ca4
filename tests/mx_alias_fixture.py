"""The `mx` fixture of the tests of MXNet's surface: `import mxnet` gives kiln (the alias),
undone after the test. Import it into a test module: `from mx_alias_fixture import mx`."""
import pytest

from kiln.mx import alias as mxnet_alias


@pytest.fixture
def mx():
    assert mxnet_alias.install()
    import mxnet
    yield mxnet
    mxnet_alias.uninstall()
