"""The process side of test_integrations.py: one library's workload, on the
device or on the CPU, in a process of its own (the libraries keep global
state: DeepSpeed's accelerator, accelerate's process state).

    python integration_runs.py WORKLOAD DEVICE OUT [RANK WORLD STORE]

Each workload trains from fixed seeds and weights and writes what it
measured (losses, a digest of the parameters) as JSON to OUT (OUT.<rank>
for a rank of a distributed run), for the test to compare with the same
workload on the CPU. Lightning's ddp strategy starts the other ranks by
running this script again.
"""

import datetime
import importlib
import json
import os
import sys
import tempfile

import torch

# A backend that is not autoloaded (ACCGEN_TEST_PACKAGE names it) is
# imported explicitly, before any library looks for devices.
if os.environ.get("ACCGEN_TEST_PACKAGE"):
    importlib.import_module(os.environ["ACCGEN_TEST_PACKAGE"])

VOCAB = 64
SEQ = 8


def gpt2(seed: int = 0):
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=32, n_positions=32, vocab_size=VOCAB,
        resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, bos_token_id=0, eos_token_id=1)
    return transformers.GPT2LMHeadModel(config)


def batches(count: int, size: int, seed: int = 1) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(2, VOCAB, (size, SEQ), generator=generator) for _ in range(count)]


def digest(named_tensors) -> dict[str, list[float]]:
    # Each parameter's values, for the test to compare with tolerances.
    return {name: t.detach().float().cpu().flatten().tolist() for name, t in named_tensors}


def write(out: str, result: dict) -> None:
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


# ------------------------------------------------------------------ DeepSpeed


# --8<-- [start:deepspeed-workload]
def deepspeed_zero(device: str, out: str, rank: int, world: int, store: str) -> None:
    """ZeRO stages 1, 2 and 3 on `world` ranks of DeepSpeed's accelerator
    (the device's, or the CPU's with DS_ACCELERATOR=cpu) over its c10d
    backend: a few AdamW steps of a small GPT-2, each rank on its own
    micro-batch, then a checkpoint saved, loaded into a new engine, and one
    more step on both."""
    import deepspeed
    from deepspeed.accelerator import get_accelerator

    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    accelerator = get_accelerator()
    deepspeed.init_distributed(
        dist_backend=accelerator.communication_backend_name(), init_method=f"file://{store}",
        rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60),
        auto_mpi_discovery=False, verbose=False)
    data = batches(3 * world, 2)
    result: dict = {"accelerator": accelerator.device_name(),
                    "backend": accelerator.communication_backend_name()}
    for stage in (1, 2, 3):
        config = {
            "train_micro_batch_size_per_gpu": 2,
            "gradient_accumulation_steps": 1,
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "torch_adam": True}},
            # Buckets sized for the example's 1 GiB devices (DeepSpeed's
            # defaults are sized for tens of GiB).
            "zero_optimization": {"stage": stage, "reduce_bucket_size": 1 << 20,
                                  "allgather_bucket_size": 1 << 20,
                                  "stage3_prefetch_bucket_size": 1 << 20},
            "steps_per_print": 1000,
            "wall_clock_breakdown": False,
        }
        engine, *_ = deepspeed.initialize(model=gpt2(), config=config)
        losses = []
        for step in range(3):
            ids = data[step * world + rank].to(engine.device)
            loss = engine(input_ids=ids, labels=ids).loss
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
        checkpoints = os.path.join(os.path.dirname(store), f"zero{stage}")
        engine.save_checkpoint(checkpoints, tag="step3")
        restored, *_ = deepspeed.initialize(model=gpt2(seed=7), config=config)
        restored.load_checkpoint(checkpoints, tag="step3")
        ids = data[rank].to(engine.device)
        after = []
        for each in (engine, restored):
            loss = each(input_ids=ids, labels=ids).loss
            each.backward(loss)
            each.step()
            after.append(loss.item())
        params = list(engine.module.named_parameters())
        with deepspeed.zero.GatheredParameters([p for _, p in params], enabled=stage == 3):
            state = digest(params)
            devices = sorted({p.device.type for _, p in params})
        result[f"zero{stage}"] = {"losses": losses, "after_load": after,
                                  "params": state, "devices": devices}
    write(f"{out}.{rank}", result)
# --8<-- [end:deepspeed-workload]


# ------------------------------------------------------------------ Lightning


def regression_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def regression_data(batch_size: int) -> torch.utils.data.DataLoader:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(32, 8, generator=generator)
    y = x.sum(dim=1, keepdim=True).sin()
    dataset = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)


def _lightning_module():
    import lightning.pytorch as pl

    class Regression(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = regression_net()
            self.losses: list[float] = []
            self.devices: set[str] = set()

        def training_step(self, batch, batch_index):
            x, y = batch
            # Where it trains: Lightning moves the model back to the CPU
            # when fit() ends, for CUDA as for any device.
            self.devices.update(str(t.device) for t in (x, *self.parameters()))
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.losses.append(loss.item())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Regression()


def _trainer(accelerator: str, devices, epochs: int, root: str, **kwargs):
    import lightning.pytorch as pl

    return pl.Trainer(
        accelerator=accelerator, devices=devices, max_epochs=epochs,
        default_root_dir=root, logger=False, enable_progress_bar=False,
        enable_model_summary=False, enable_checkpointing=False, **kwargs)


# --8<-- [start:lightning-workload]
def lightning_fit(device: str, out: str) -> None:
    """Trainer.fit on one device for two epochs; then one epoch, a
    checkpoint, and a new Trainer that resumes from it for the second."""
    root = tempfile.mkdtemp(prefix="accgen-lightning-")
    model = _lightning_module()
    trainer = _trainer(device, 1, 2, root)
    trainer.fit(model, regression_data(8))
    first = _lightning_module()
    one_epoch = _trainer(device, 1, 1, root)
    one_epoch.fit(first, regression_data(8))
    checkpoint = os.path.join(root, "epoch1.ckpt")
    one_epoch.save_checkpoint(checkpoint)
    resumed = _lightning_module()
    _trainer(device, 1, 2, root).fit(resumed, regression_data(8), ckpt_path=checkpoint)
    write(out, {
        "root_device": str(trainer.strategy.root_device),
        "devices": sorted(model.devices),
        "losses": model.losses,
        "params": digest(model.named_parameters()),
        "resumed_losses": resumed.losses,
        "resumed_params": digest(resumed.named_parameters()),
    })
# --8<-- [end:lightning-workload]


# --8<-- [start:lightning-ddp-workload]
def lightning_ddp(device: str, out: str) -> None:
    """Trainer.fit with the ddp strategy on two devices: Lightning starts
    the second rank by running this script again."""
    root = tempfile.mkdtemp(prefix="accgen-lightning-ddp-")
    model = _lightning_module()
    trainer = _trainer(device, 2, 1, root, strategy="ddp")
    trainer.fit(model, regression_data(4))
    import torch.distributed as dist

    write(f"{out}.{trainer.global_rank}", {
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "root_device": str(trainer.strategy.root_device),
        "devices": sorted(model.devices),
        "world_size": trainer.world_size,
        "losses": model.losses,
        "params": digest(model.named_parameters()),
    })
# --8<-- [end:lightning-ddp-workload]


# ------------------------------------------------------------ Hugging Face


# --8<-- [start:hf-trainer-workload]
def hf_trainer(device: str, out: str) -> None:
    """transformers.Trainer.train() of a small GPT-2, evaluation, and
    save_model; on the CPU with use_cpu=True, else on the device that
    ACCELERATE_TORCH_DEVICE names."""
    import transformers
    from transformers.trainer_callback import TrainerCallback

    class Dataset(torch.utils.data.Dataset):
        def __init__(self, count: int, seed: int) -> None:
            self.ids = batches(1, count, seed)[0]

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, index):
            return {"input_ids": self.ids[index], "labels": self.ids[index]}

    class Losses(TrainerCallback):
        def __init__(self) -> None:
            self.losses: list[float] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.losses.append(logs["loss"])

    root = tempfile.mkdtemp(prefix="accgen-hf-")
    args = transformers.TrainingArguments(
        output_dir=root, max_steps=4, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, learning_rate=1e-2, logging_steps=1,
        report_to=[], save_strategy="no", seed=0, dataloader_num_workers=0,
        use_cpu=device == "cpu", disable_tqdm=True)
    losses = Losses()
    trainer = transformers.Trainer(
        model=gpt2(), args=args, train_dataset=Dataset(16, 1),
        eval_dataset=Dataset(8, 2), callbacks=[losses])
    trainer.train()
    metrics = trainer.evaluate()
    saved = os.path.join(root, "model")
    trainer.save_model(saved)
    loaded = transformers.GPT2LMHeadModel.from_pretrained(saved)
    write(out, {
        "device": str(trainer.args.device),
        "param_devices": sorted({p.device.type for p in trainer.model.parameters()}),
        "losses": losses.losses,
        "eval_loss": metrics["eval_loss"],
        "params": digest(trainer.model.named_parameters()),
        "saved_params": digest(loaded.named_parameters()),
    })
# --8<-- [end:hf-trainer-workload]


def accelerate_state(device: str, out: str, rank: int = -1, world: int = 1,
                     store: str = "") -> None:
    """What accelerate and transformers' TrainingArguments make of this
    process, alone or as a rank of `world`."""
    import torch.distributed as dist
    import transformers
    from accelerate import PartialState

    kwargs = {}
    if rank >= 0:
        os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
        kwargs = {"init_method": f"file://{store}?rank={rank}&world_size={world}",
                  "timeout": datetime.timedelta(seconds=60)}
    state = PartialState(**kwargs)
    args = transformers.TrainingArguments(output_dir=tempfile.mkdtemp(), report_to=[])
    write(out if rank < 0 else f"{out}.{rank}", {
        "distributed_type": str(state.distributed_type.value),
        "num_processes": state.num_processes, "device": str(state.device),
        "trainer_device": str(args.device),
        "group_size": dist.get_world_size() if dist.is_initialized() else None})


def accelerate_ddp(device: str, out: str, rank: int, world: int, store: str) -> None:
    """One rank of an accelerate training loop over `world` processes:
    Accelerator.prepare wraps the model for data parallelism, and each rank
    trains on its shard of the batches."""
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    # The ranks meet in a file store. On the CPU accelerate passes the rank
    # and world size itself, and asks for a rank 0 host the store does not
    # use.
    init_method = f"file://{store}"
    if device == "cpu":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    else:
        init_method += f"?rank={rank}&world_size={world}"
    accelerator = Accelerator(cpu=device == "cpu", kwargs_handlers=[InitProcessGroupKwargs(
        backend=None, init_method=init_method, timeout=datetime.timedelta(seconds=60))])
    net = regression_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    model, optimizer, data = accelerator.prepare(net, optimizer, regression_data(4))
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    import torch.distributed as dist

    write(f"{out}.{rank}", {
        "distributed_type": str(accelerator.distributed_type.value),
        "backend": dist.get_backend(),
        "device": str(accelerator.device),
        "params": digest(accelerator.unwrap_model(model).named_parameters()),
    })


WORKLOADS = {
    "deepspeed_zero": deepspeed_zero,
    "lightning_fit": lightning_fit,
    "lightning_ddp": lightning_ddp,
    "hf_trainer": hf_trainer,
    "accelerate_state": accelerate_state,
    "accelerate_ddp": accelerate_ddp,
}


def main(argv: list[str]) -> None:
    workload, device, out, *rest = argv
    if rest:
        WORKLOADS[workload](device, out, int(rest[0]), int(rest[1]), rest[2])
    else:
        WORKLOADS[workload](device, out)


if __name__ == "__main__":
    main(sys.argv[1:])
