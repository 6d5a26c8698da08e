"""The backend package imports cleanly whichever comes first: the package
itself (which imports torch, whose autoload finds this package's entry point
while it is still initialising) or torch (which autoloads the package)."""


# --8<-- [start:import-order]
def test_package_first_then_torch(run_python, device, mod):
    r = run_python(
        f"import {mod.__name__}\n"
        "import torch\n"
        f"x = torch.ones(2, device={device!r}) + 1\n"
        "print(x.cpu().tolist())\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0, 2.0]"


def test_torch_alone_autoloads(run_python, device):
    r = run_python(
        "import torch\n"
        f"print(torch.device({device!r}).type, hasattr(torch, {device!r}))\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [device, "True"]
# --8<-- [end:import-order]
