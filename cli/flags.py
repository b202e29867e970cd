"""What several `inkling` commands share: the model flags, the Ray flags and the
options they turn into, flag types, and the progress bar a command shows while it loads
a model. The command modules (main.py, replay.py, replay_run.py, datastore.py) import
these from here, never one another's private helpers."""
from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from inkling.completion.errors import OptionError
from inkling.completion.options import DTYPES, FORWARDS, WEIGHT_FORMATS, check_device

from inkling.evaluation.ray_pool import RayOptions


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def device(text: str) -> str:
    """An argparse type: a device name by the options tree's rule."""
    try:
        check_device("--device", text)
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--device ")) from None
    return text


def add_model_flags(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--device``, ``--dtype`` and ``--forward``: which model a command
    loads, where, and the code that runs it."""
    p.add_argument("--model", metavar="PATH", help="a local Hugging Face model folder "
                   "(default: the bundled model)")
    p.add_argument("--device", default="auto", type=device,
                   help="auto, cpu, cuda or cuda:N (default: auto: cuda where torch sees a GPU)")
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="the weights' type in memory (default: auto: the model's own, "
                   "float32 on the CPU)")
    p.add_argument("--forward", default="auto", choices=FORWARDS,
                   help="the code that runs the model (default: auto: native where it is "
                   "built, else compact; compact never waits for a build)")
    p.add_argument("--weights", default="auto", choices=WEIGHT_FORMATS,
                   help="how the weights are held (default: auto: int8 for a model of 100 M "
                   "parameters or more that the native forward runs, else float)")


def model_changes(args) -> dict:
    """The options tree's ``model`` branch that the model flags ask for."""
    return {"path": args.model or "", "device": args.device, "dtype": args.dtype,
            "forward": args.forward, "weights": args.weights}


def load_progress():
    """A progress bar on standard error (only on a terminal) for model loading."""
    bar = tqdm(total=100, desc="loading model", unit="%", file=sys.stderr, disable=None,
               leave=False, bar_format="{desc}: {bar} {n:.0f}%")

    def report(stage: str, fraction: float) -> None:
        bar.set_description(stage)
        bar.n = round(fraction * 100)
        bar.refresh()
        if fraction >= 1.0:
            bar.close()
    return report


def add_ray_flags(p: argparse.ArgumentParser, what: str) -> None:
    """``--ray [ADDRESS]`` and its options: ``what`` is sharded into tasks on Ray actors."""
    r = p.add_argument_group("sharding over Ray (pip install -e '.[ray]')")
    r.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help=f"run {what} as tasks on Ray actors: on a local Ray instance "
                   "(no ADDRESS), or on the cluster at ADDRESS (e.g. ray://head:10001, or auto)")
    r.add_argument("--ray-actors", type=positive, default=2, metavar="N",
                   help="actors, each loading the model once (default 2)")
    r.add_argument("--ray-cpus", type=float, default=1.0, metavar="C",
                   help="CPUs per actor (default 1)")
    r.add_argument("--ray-gpus", type=float, default=None, metavar="G",
                   help="GPUs per actor (default: 1 when the cluster has GPUs, else 0)")
    r.add_argument("--ray-model-path", metavar="PATH", help="the model (a folder or a GGUF "
                   "file) as the workers see it (a shared path); default: the driver's model is "
                   "shipped to them through Ray's object store")
    r.add_argument("--ray-retries", type=int, default=2, metavar="N",
                   help="times a task is run again when its actor dies (default 2)")


def ray_options(args):
    """The RayOptions the ``--ray*`` flags ask for."""
    if args.ray_retries < 0:
        raise OptionError(f"--ray-retries must be 0 or more, got {args.ray_retries}")
    return RayOptions(address=None if args.ray == "local" else args.ray,
                      actors=args.ray_actors, cpus_per_actor=args.ray_cpus,
                      gpus_per_actor=args.ray_gpus, model_path=args.ray_model_path,
                      retries=args.ray_retries)
