"""The device in the libraries users train with, each found from the
backend's specs alone (<package>.integrations): DeepSpeed's ZeRO stages on
two ranks, Lightning's Trainer on one device and with DDP on two, Hugging
Face's Trainer, PEFT's LoRA, and transformers' own test suite; each
workload compared with the same one on the CPU. The workloads run in
processes of their own (integration_runs.py): the libraries keep global
state."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

import integration_runs
from processes import run_together

RUNS = pathlib.Path(__file__).with_name("integration_runs.py")
WORLD = 2


@pytest.fixture(scope="module")
def package(device):
    from conftest import _device_and_package

    return _device_and_package()[1]


@pytest.fixture(scope="module")
def integrations(package):
    import importlib

    return importlib.import_module(package + ".integrations")


def run_workload(package, workload, device, *args, env=None, timeout=300, ranks=None):
    """Runs `workload` of integration_runs.py on `device` (in `ranks`
    processes when given) and returns what it wrote: a dict, or a list of
    them, one per rank."""
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"accgen-{workload}-"))
    out = work / "result.json"
    environ = dict(os.environ, ACCGEN_TEST_PACKAGE=package)
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    commands = [[sys.executable, str(RUNS), workload, device, str(out), *map(str, args)]]
    if ranks:
        commands = [command + [str(rank), str(ranks), str(work / "store")]
                    for command in commands for rank in range(ranks)]
    results = run_together(commands, environ, timeout, cwd=str(work))
    for code, output in results:
        assert code == 0, f"{workload} on {device} failed:\n{output[-8000:]}"
    try:
        results = sorted(work.glob("result.json*"))
        loaded = [json.loads(path.read_text()) for path in results]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert loaded, f"{workload} on {device} wrote nothing:\n{results[0][1][-4000:]}"
    return loaded if len(loaded) > 1 or ranks else loaded[0]


def assert_params_close(got, want, atol=1e-5, rtol=1e-4, what="params"):
    assert got.keys() == want.keys(), what
    for name in want:
        torch.testing.assert_close(torch.tensor(got[name]), torch.tensor(want[name]),
                                   atol=atol, rtol=rtol, msg=f"{what}: {name}")


def run_python(code, env=None, cwd=None, timeout=180):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), cwd=cwd, timeout=timeout)


# ----------------------------------------------------------- the adapters


def test_the_adapters_load_no_library(package, device):
    # `import torch` loads the backend and its adapters' hooks, none of the
    # libraries they adapt to.
    r = run_python(
        f"import sys, torch, {package}\n"
        f"assert hasattr(torch, {device!r})\n"
        "heavy = [m for m in ('deepspeed', 'lightning', 'pytorch_lightning', "
        "'accelerate', 'transformers', 'peft') if m in sys.modules]\n"
        f"adapters = [m for m in sys.modules if m.startswith('{package}.integrations.')]\n"
        "print(heavy, adapters)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] []", r.stdout


# ---------------------------------------------------------------- DeepSpeed


@pytest.mark.parametrize("choice,expected", [
    (None, "device"),          # unset: the device, as DeepSpeed picks a device it knows
    ("device", "device"),      # DS_ACCELERATOR=<device>
    ("cpu", "cpu"),            # DeepSpeed's own choice stays DeepSpeed's
])
def test_deepspeed_selects_the_device(package, device, choice, expected):
    env = {"ACCGEN_TEST_PACKAGE": package}
    code = (f"import os, {package}\n"
            "os.environ.pop('DS_ACCELERATOR', None)\n")
    if choice is not None:
        code += f"os.environ['DS_ACCELERATOR'] = {device if choice == 'device' else choice!r}\n"
    code += ("import deepspeed\n"
             "from deepspeed.accelerator import get_accelerator\n"
             "a = get_accelerator()\n"
             "print(type(a).__name__, a.device_name(), a.communication_backend_name())\n")
    r = run_python(code, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    name, device_name, backend = r.stdout.split()[-3:]
    if expected == "device":
        assert (device_name, backend) == (device, torch.distributed.Backend.default_device_backend_map[device])
        assert name == f"{device.upper()}_Accelerator"
    else:
        assert device_name == "cpu", r.stdout


def test_deepspeed_accelerator_runs_on_the_device(integrations, device, mod):
    deepspeed = pytest.importorskip("deepspeed")
    from deepspeed.accelerator import get_accelerator

    accelerator = get_accelerator()
    assert isinstance(accelerator, integrations.deepspeed.accelerator_class())
    assert accelerator.device_count() == mod.device_count()
    assert accelerator.current_device_name() == f"{device}:{mod.current_device()}"
    assert accelerator.is_available() and not accelerator.is_synchronized_device()
    # Tensors, streams, events: work queued on a side stream, waited for.
    x = accelerator.FloatTensor([1.0, 2.0])
    assert x.device.type == device and x.dtype == torch.float32
    assert accelerator.on_accelerator(x) and not accelerator.on_accelerator(x.cpu())
    side = accelerator.Stream()
    done = accelerator.Event()
    with accelerator.stream(side):
        y = x * 3
        done.record()
    accelerator.current_stream().wait_event(done)
    assert y.cpu().tolist() == [3.0, 6.0]
    # Random numbers: the device's generator, seeded and restored.
    accelerator.manual_seed(5)
    state = accelerator.get_rng_state()
    first = torch.rand(4, device=device).cpu()
    accelerator.set_rng_state(state)
    torch.testing.assert_close(torch.rand(4, device=device).cpu(), first)
    assert accelerator.default_generator(0).initial_seed() == 5
    # Memory statistics are the device's.
    before = accelerator.memory_allocated()
    block = torch.empty(1 << 20, device=device)
    assert accelerator.memory_allocated() >= before + block.nbytes
    assert accelerator.max_memory_allocated() >= accelerator.memory_allocated()
    assert accelerator.memory_stats()["allocated_bytes.all.current"] == mod.memory_allocated()
    assert accelerator.total_memory() == mod.get_device_properties().total_memory
    assert 0 < accelerator.available_memory() <= accelerator.total_memory()
    del block
    # Graphs: captured, replayed on the inputs as they are then.
    static = torch.zeros(4, device=device)
    graph = accelerator.create_graph()
    with accelerator.capture_to_graph(graph):
        out = static * 2 + 1
    static.copy_(torch.arange(4.0).to(device))
    accelerator.replay_graph(graph)
    assert out.cpu().tolist() == [1.0, 3.0, 5.0, 7.0]
    # Pinned host memory, dtypes, profiler ranges.
    assert accelerator.pin_memory(torch.ones(3)).is_pinned() == hasattr(mod, "empty_host_cache")
    assert accelerator.supported_dtypes()[0] == torch.float32
    with torch.profiler.profile() as profile:
        accelerator.range_push("accgen-range")
        x + 1
        accelerator.range_pop()
    assert any(e.name == "accgen-range" for e in profile.events())
    assert deepspeed.comm is not None


def _one_rank_environment(patch):
    for name in ("RANK", "LOCAL_RANK"):
        patch.setenv(name, "0")
    patch.setenv("WORLD_SIZE", "1")


@pytest.fixture(scope="module")
def one_rank_group(device):
    # A group of one rank over the device's c10d backend in this process,
    # for deepspeed.initialize.
    deepspeed = pytest.importorskip("deepspeed")
    import torch.distributed as dist
    from deepspeed.accelerator import get_accelerator

    store = tempfile.mkdtemp(prefix="accgen-one-rank-")
    with pytest.MonkeyPatch.context() as patch:
        _one_rank_environment(patch)
        deepspeed.init_distributed(
            dist_backend=get_accelerator().communication_backend_name(),
            init_method=f"file://{store}/store", rank=0, world_size=1,
            auto_mpi_discovery=False, verbose=False)
    yield deepspeed
    dist.destroy_process_group()
    shutil.rmtree(store, ignore_errors=True)


@pytest.fixture
def one_rank(one_rank_group, monkeypatch):
    # DeepSpeed, with the environment of the one rank while the test runs
    # (and only then: the other tests' processes must not inherit it).
    _one_rank_environment(monkeypatch)
    return one_rank_group


def test_deepspeed_fused_op_builders_say_there_are_none(integrations, device):
    pytest.importorskip("deepspeed")
    from deepspeed.ops.op_builder import FusedAdamBuilder

    builder = FusedAdamBuilder()
    assert not builder.is_compatible()
    with pytest.raises(integrations.IntegrationError,
                       match=f"FusedAdamBuilder has no kernels for the {device} device.*torch_adam"):
        builder.load()


def test_deepspeed_config_with_fused_adam_is_refused(integrations, one_rank):
    config = {"train_micro_batch_size_per_gpu": 1,
              "optimizer": {"type": "Adam", "params": {"lr": 1e-3}}}
    model = torch.nn.Linear(4, 4)
    with pytest.raises(integrations.IntegrationError, match="FusedAdamBuilder has no kernels"):
        one_rank.initialize(model=model, config=config)


def test_deepspeed_config_with_an_undeclared_dtype_is_refused(integrations, one_rank, monkeypatch):
    # A backend whose specs declare no bfloat16 (features.autocast: false)
    # refuses a bf16 configuration instead of training in float32.
    monkeypatch.setattr(integrations, "declared_dtypes", lambda: [torch.float32])
    import importlib

    adapter = importlib.import_module(integrations.__name__ + ".deepspeed")
    monkeypatch.setattr(adapter, "declared_dtypes", lambda: [torch.float32])
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
    with pytest.raises(ValueError, match="bf16 is not supported"):
        one_rank.initialize(model=torch.nn.Linear(4, 4), config=config)


def test_deepspeed_without_the_backend_is_an_error(device):
    # The backend not loaded (autoload off, not imported): DS_ACCELERATOR
    # naming the device fails by name instead of training on the CPU.
    r = run_python("import deepspeed; from deepspeed.accelerator import get_accelerator; "
                   "get_accelerator()",
                   env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "DS_ACCELERATOR": device,
                        "ACCGEN_TEST_PACKAGE": ""})
    assert r.returncode != 0
    assert f'Value "{device}" is not supported' in r.stderr, r.stderr[-2000:]


@pytest.fixture(scope="module")
def zero_runs(package, device):
    # The same run with DeepSpeed's own CPU accelerator (over Gloo).
    ranks = run_workload(package, "deepspeed_zero", device, ranks=WORLD, timeout=600)
    on_cpu = run_workload(package, "deepspeed_zero", "cpu", ranks=WORLD, timeout=600,
                          env={"DS_ACCELERATOR": "cpu"})
    return ranks, on_cpu


# --8<-- [start:deepspeed-zero]
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_deepspeed_zero_matches_the_cpu(zero_runs, device, stage):
    ranks, on_cpu = zero_runs
    backend = torch.distributed.Backend.default_device_backend_map[device]
    for rank, (result, want) in enumerate(zip(ranks, on_cpu)):
        assert (result["accelerator"], result["backend"]) == (device, backend)
        assert (want["accelerator"], want["backend"]) == ("cpu", "gloo")
        got, want = result[f"zero{stage}"], want[f"zero{stage}"]
        assert got["devices"] == [device] and want["devices"] == ["cpu"]
        torch.testing.assert_close(got["losses"], want["losses"], atol=1e-5, rtol=1e-5)
        assert_params_close(got["params"], want["params"], atol=2e-5, rtol=1e-4,
                            what=f"ZeRO-{stage} rank {rank}")
        # The engine restored from the checkpoint takes the same next step.
        trained, restored = got["after_load"]
        assert trained == pytest.approx(restored, rel=1e-6, abs=1e-6)
# --8<-- [end:deepspeed-zero]


# ----------------------------------------------------------------- Lightning


@pytest.fixture(scope="module")
def lightning():
    return pytest.importorskip("lightning.pytorch")


def test_lightning_trainer_on_one_device_matches_the_cpu(package, device, lightning):
    got = run_workload(package, "lightning_fit", device)
    want = run_workload(package, "lightning_fit", "cpu")
    assert got["root_device"] == f"{device}:0" and got["devices"] == [f"{device}:0"]
    assert want["devices"] == ["cpu"]
    torch.testing.assert_close(got["losses"], want["losses"], atol=1e-6, rtol=1e-5)
    assert_params_close(got["params"], want["params"])
    # Resumed from the checkpoint of its first epoch, the second epoch is
    # the uninterrupted run's.
    steps = len(got["losses"]) // 2
    torch.testing.assert_close(got["resumed_losses"], got["losses"][steps:], atol=1e-6, rtol=1e-5)
    assert_params_close(got["resumed_params"], got["params"], what="resumed")


def test_lightning_ddp_on_two_devices_matches_the_cpu(package, device, mod, two_devices, lightning):
    # The same run on the CPU: Lightning's ddp over Gloo.
    ranks = run_workload(package, "lightning_ddp", device, timeout=400)
    on_cpu = run_workload(package, "lightning_ddp", "cpu", timeout=400)
    assert len(ranks) == len(on_cpu) == 2
    backend = torch.distributed.Backend.default_device_backend_map[device]
    for rank, (result, want) in enumerate(zip(ranks, on_cpu)):
        assert (result["backend"], result["world_size"]) == (backend, 2)
        assert (want["backend"], want["world_size"]) == ("gloo", 2)
        assert result["root_device"] == f"{device}:{rank}"
        assert result["devices"] == [f"{device}:{rank}"]
        torch.testing.assert_close(result["losses"], want["losses"], atol=1e-6, rtol=1e-5)
        assert_params_close(result["params"], want["params"], what=f"rank {rank}")


def test_lightning_finds_the_device_by_name(integrations, device, mod, lightning):
    trainer = lightning.Trainer(accelerator=device, devices=1, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False)
    assert type(trainer.accelerator).__name__ == f"{device.capitalize()}Accelerator"
    assert trainer.strategy.root_device == torch.device(device, 0)
    assert type(trainer.accelerator).auto_device_count() == mod.device_count()


def test_lightning_more_devices_than_exist_is_an_error(device, mod, lightning):
    from lightning.fabric.utilities.exceptions import MisconfigurationException

    count = mod.device_count()
    with pytest.raises(MisconfigurationException,
                       match=f"asks for {count + 3} {device} devices, but this machine has {count}"):
        lightning.Trainer(accelerator=device, devices=count + 3, logger=False)
    with pytest.raises(MisconfigurationException, match=f"names {device}:{count}"):
        lightning.Trainer(accelerator=device, devices=[count], logger=False)


def test_lightning_single_device_workaround_is_still_needed(device, lightning):
    # Note [Lightning puts one custom device on the CPU]: Lightning's own
    # choice for one device of an accelerator it does not know by class is
    # the CPU. This test fails once Lightning picks the device itself; then
    # the workaround in integrations/lightning.py goes.
    from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

    connector = _AcceleratorConnector(accelerator=device, devices=1)
    original = _AcceleratorConnector._choose_strategy._accgen_original
    assert original(connector).root_device == torch.device("cpu")


def test_lightning_ddp_workaround_is_still_needed(device, lightning):
    # Note [Lightning's DDP makes a CUDA stream]: Lightning's own DDP
    # strategy wraps a model on the device inside a CUDA stream. This test
    # fails once it no longer does; then the workaround in
    # integrations/lightning.py goes.
    from lightning.pytorch.strategies import DDPStrategy

    strategy = DDPStrategy(parallel_devices=[torch.device(device, 0)])
    # A CPU build of torch has no torch.cuda.Stream; a CUDA build without a
    # GPU fails to start CUDA.
    with pytest.raises(RuntimeError, match="CUDA"):
        strategy._setup_model(torch.nn.Linear(2, 2).to(device))


def test_lightning_without_the_backend_is_an_error(device):
    r = run_python(f"import lightning.pytorch as pl; pl.Trainer(accelerator={device!r})",
                   env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "ACCGEN_TEST_PACKAGE": ""})
    assert r.returncode != 0
    assert f"invalid accelerator name: `accelerator='{device}'`" in r.stderr, r.stderr[-2000:]


# ------------------------------------------------------------- Hugging Face


def test_hf_trainer_trains_on_the_device_as_on_the_cpu(package, device):
    pytest.importorskip("accelerate")
    got = run_workload(package, "hf_trainer", device, env={"ACCELERATE_TORCH_DEVICE": device})
    want = run_workload(package, "hf_trainer", "cpu")
    assert got["device"].split(":")[0] == device and want["device"] == "cpu"
    assert got["param_devices"] == [device]
    assert len(got["losses"]) == 4
    torch.testing.assert_close(got["losses"], want["losses"], atol=1e-4, rtol=1e-4)
    assert got["eval_loss"] == pytest.approx(want["eval_loss"], rel=1e-4, abs=1e-4)
    assert_params_close(got["params"], want["params"], atol=2e-5, rtol=1e-4)
    assert_params_close(got["saved_params"], got["params"], atol=0, rtol=0, what="saved")


def test_accelerate_and_trainer_take_the_device_by_name(package, device):
    pytest.importorskip("accelerate")
    got = run_workload(package, "accelerate_state", device,
                       env={"ACCELERATE_TORCH_DEVICE": f"{device}:1"})
    assert got == {"distributed_type": "NO", "num_processes": 1, "device": f"{device}:1",
                   "trainer_device": f"{device}:1", "group_size": None}


def test_trainer_needs_the_device_named_today(package, device):
    # accelerate finds the device through torch.accelerator by itself, but
    # transformers' TrainingArguments (5.24) knows a fixed list of devices
    # and otherwise takes ACCELERATE_TORCH_DEVICE or the CPU: the two then
    # disagree. This test fails once transformers asks torch.accelerator
    # (docs/guide/huggingface.md has the upstream change).
    pytest.importorskip("accelerate")
    got = run_workload(package, "accelerate_state", device,
                       env={"ACCELERATE_TORCH_DEVICE": None})
    assert (got["device"], got["trainer_device"]) == (device, "cpu")


# --8<-- [start:accelerate-today]
def test_accelerate_without_the_backend_is_an_error(device):
    # ACCELERATE_TORCH_DEVICE naming the device while the backend is not
    # loaded fails by the device's name instead of training on the CPU.
    pytest.importorskip("accelerate")
    r = run_python("from accelerate import PartialState; PartialState()",
                   env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "ACCGEN_TEST_PACKAGE": "",
                        "ACCELERATE_TORCH_DEVICE": device})
    assert r.returncode != 0
    assert f"device string: {device}" in r.stderr, r.stderr[-2000:]


def test_accelerate_runs_each_rank_alone_today(package, device):
    # accelerate 1.16 knows a distributed type for a fixed list of devices
    # (DistributedType); a rank of several on any other device is set up as
    # a single process, so every rank trains alone. This test shows it, and
    # fails once accelerate accepts the device (docs/guide/huggingface.md
    # has the upstream change).
    pytest.importorskip("accelerate")
    ranks = run_workload(package, "accelerate_state", device, ranks=WORLD)
    for result in ranks:
        # The ranks meet in a process group, and each is told it is alone.
        assert result["group_size"] == WORLD
        assert (result["distributed_type"], result["num_processes"]) == ("NO", 1)
# --8<-- [end:accelerate-today]


def test_accelerate_patch_trains_ranks_on_the_device(package, device, two_devices, tmp_path):
    # The upstream change docs/guide/huggingface.md gives, applied to a copy
    # of the installed accelerate: two ranks then train on the device over
    # its c10d backend, as two ranks do on the CPU over Gloo.
    accelerate = pytest.importorskip("accelerate")
    patch = pathlib.Path(__file__).parents[2] / "docs/guide/patches" / \
        f"accelerate-{accelerate.__version__}-torch-accelerator.patch"
    shutil.copytree(pathlib.Path(accelerate.__file__).parent, tmp_path / "accelerate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    applied = subprocess.run(["git", "apply", "-p1", str(patch)], cwd=str(tmp_path),
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    pythonpath = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    ranks = run_workload(package, "accelerate_ddp", device, ranks=WORLD,
                         env={"PYTHONPATH": pythonpath})
    on_cpu = run_workload(package, "accelerate_ddp", "cpu", ranks=WORLD,
                          env={"PYTHONPATH": pythonpath})
    backend = torch.distributed.Backend.default_device_backend_map[device]
    for rank, (result, want) in enumerate(zip(ranks, on_cpu)):
        assert result["distributed_type"] == "MULTI_ACCELERATOR"
        assert (result["backend"], result["device"]) == (backend, f"{device}:{rank}")
        assert (want["distributed_type"], want["backend"]) == ("MULTI_CPU", "gloo")
        assert_params_close(result["params"], want["params"], what=f"rank {rank}")


# --8<-- [start:peft-lora]
def test_peft_lora_on_the_device_as_on_the_cpu(device, tmp_path):
    peft = pytest.importorskip("peft")
    pytest.importorskip("transformers")

    def fine_tune(on):
        torch.manual_seed(0)
        config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"],
                                 fan_in_fan_out=True, lora_dropout=0.0, init_lora_weights=False)
        model = peft.get_peft_model(integration_runs.gpt2(), config).to(on)
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=1e-2)
        losses = []
        for ids in integration_runs.batches(3, 4):
            ids = ids.to(on)
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        return model, losses

    dev_model, dev_losses = fine_tune(device)
    cpu_model, cpu_losses = fine_tune("cpu")
    torch.testing.assert_close(dev_losses, cpu_losses, atol=1e-5, rtol=1e-5)
    lora = {n: p for n, p in dev_model.named_parameters() if p.requires_grad}
    assert lora and all("lora_" in n for n in lora)
    for name, param in cpu_model.named_parameters():
        if param.requires_grad:
            torch.testing.assert_close(lora[name].cpu(), param.detach(), atol=2e-5, rtol=1e-4)
    # Adapters saved from the device and loaded onto a fresh base model on
    # the device give the fine-tuned outputs.
    dev_model.save_pretrained(tmp_path)
    loaded = peft.PeftModel.from_pretrained(integration_runs.gpt2(), tmp_path).to(device)
    ids = integration_runs.batches(1, 2, seed=9)[0].to(device)
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits.cpu(),
                                   dev_model(input_ids=ids).logits.cpu())
# --8<-- [end:peft-lora]


def test_transformers_test_suite_runs_on_the_device(package, device, tmp_path):
    pytest.importorskip("transformers")
    r = run_python(f"import sys; from {package}.integrations.__main__ import main; "
                   "sys.exit(main(['transformers-spec']))", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    spec = tmp_path / f"{device}_device_spec.py"
    assert spec.is_file() and f"TRANSFORMERS_TEST_DEVICE_SPEC={spec.name}" in r.stdout
    # A second copy never overwrites the file.
    again = run_python(f"import sys; from {package}.integrations.__main__ import main; "
                       "sys.exit(main(['transformers-spec']))", cwd=str(tmp_path))
    assert again.returncode == 1 and "exists" in again.stderr
    # A test written as transformers' own are, with its device helpers.
    (tmp_path / "test_on_device.py").write_text(
        "import torch\n"
        "from transformers import GPT2Config, GPT2LMHeadModel\n"
        "from transformers.testing_utils import (torch_device, require_torch_accelerator,\n"
        "    backend_device_count, backend_manual_seed, backend_synchronize,\n"
        "    backend_memory_allocated, backend_empty_cache)\n"
        "@require_torch_accelerator\n"
        "def test_gpt2_forward_on_the_device():\n"
        f"    assert torch_device == {device!r}\n"
        f"    assert backend_device_count(torch_device) == torch.{device}.device_count()\n"
        "    backend_manual_seed(torch_device, 0)\n"
        "    torch.manual_seed(0)\n"
        "    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50,\n"
        "                                       bos_token_id=0, eos_token_id=1)).eval()\n"
        "    ids = torch.randint(0, 50, (1, 6))\n"
        "    want = model(ids).logits\n"
        "    got = model.to(torch_device)(ids.to(torch_device)).logits\n"
        "    backend_synchronize(torch_device)\n"
        "    assert backend_memory_allocated(torch_device) > 0\n"
        "    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)\n"
        "    backend_empty_cache(torch_device)\n")
    r = subprocess.run(
        [sys.executable, "-c", f"import sys, pytest, {package}; "
         "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'test_on_device.py']))"],
        capture_output=True, text=True, cwd=str(tmp_path),
        env=dict(os.environ, TRANSFORMERS_TEST_DEVICE_SPEC=spec.name))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "1 passed" in r.stdout, r.stdout
