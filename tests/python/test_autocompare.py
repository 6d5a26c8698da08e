"""Autocompare (<PREFIX>_AUTOCOMPARE, runtime/python/_autocompare.py):
every device operator checked against the CPU, in a fresh interpreter per
setting. A deliberately wrong kernel (aten::neg replaced for the device by
one that adds 1) is caught, named, and either raises or is logged."""
import pytest

WRONG_NEG = """
lib = torch.library.Library("aten", "IMPL")
lib.impl("neg", lambda t: torch.ops.aten.add.Tensor(t, 1), "PrivateUse1")
"""


@pytest.fixture(scope="module")
def autocompare(mod, device, run_python):
    variable = f"{mod._C._config['env_prefix']}_AUTOCOMPARE"

    def run(value, code):
        prelude = f"import torch, {mod.__name__}\nDEVICE = {device!r}\n"
        return run_python(prelude + code, env={variable: value})

    return run


def test_off_installs_nothing(autocompare):
    for value in (None, "0"):
        r = autocompare(value, """
import sys
assert torch._C._len_torch_dispatch_stack() == 0
assert not any(name.endswith("._autocompare") for name in sys.modules)
print("off")
""")
        assert r.returncode == 0, r.stderr
        assert "off" in r.stdout


def test_a_training_step_is_clean(autocompare):
    r = autocompare("raise", """
assert torch._C._len_torch_dispatch_stack() == 1
torch.manual_seed(0)
cpu = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(),
                          torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
model.load_state_dict(cpu.state_dict())
model = model.to(DEVICE)
opt = torch.optim.Adam(model.parameters())
x, y = torch.randn(2, 3, 8, 8), torch.tensor([1, 3])
loss = torch.nn.functional.cross_entropy(model(x.to(DEVICE)), y.to(DEVICE))
loss.backward()
opt.step()
torch.nn.functional.dropout(x.to(DEVICE), 0.5)  # random: not compared
print("clean")
""")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "clean" in r.stdout


def test_a_wrong_kernel_raises_naming_it(autocompare):
    r = autocompare("raise", WRONG_NEG + """
x = torch.arange(6.0).view(2, 3)
try:
    torch.neg(x.to(DEVICE))
except RuntimeError as error:
    assert type(error).__name__ == "AutocompareError", type(error)
    print(error)
else:
    raise SystemExit("no error")
""")
    assert r.returncode == 0, r.stderr[-3000:]
    message = r.stdout
    assert "aten::neg differs from the CPU" in message
    assert "schema: aten::neg(Tensor self) -> Tensor" in message
    assert "(2, 3) torch.float32" in message
    assert "largest difference 11" in message


def test_log_mode_reports_each_operator_once_and_goes_on(autocompare):
    r = autocompare("log", WRONG_NEG + """
for _ in range(3):
    y = torch.neg(torch.arange(4.0).to(DEVICE))
torch.testing.assert_close(y.cpu(), torch.arange(4.0) + 1)
print("went on")
""")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "went on" in r.stdout
    lines = [line for line in r.stderr.splitlines() if line.startswith("autocompare:")]
    assert len(lines) == 1, r.stderr
    assert "aten::neg" in lines[0]


def test_an_unknown_setting_is_refused(autocompare):
    r = autocompare("sometimes", "print('loaded')")
    assert r.returncode != 0
    assert "unknown mode 'sometimes'" in r.stderr
