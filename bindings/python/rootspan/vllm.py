"""rootspan as a vLLM load format: `LLM(model=..., load_format="rootspan")`, `vllm serve ... --load-format rootspan`.

The installed package registers it in every vLLM process through the `vllm.general_plugins` entry point
(`rootspan = "rootspan.vllm:register"` in pyproject.toml), so user code imports nothing. Options come from
vLLM's `model_loader_extra_config` (`--model-loader-extra-config '{"strategy": "read"}'`):

    strategy   "auto" (default: mapped on local disks and tmpfs, read on network, FUSE and overlay file systems),
               "mmap", "read" or "direct"
    verify     true: hash every file while it is read and refuse the load unless each is the published one (a
               Hugging Face cache names its blobs by their SHA-256)
    digests    a digest manifest (`rootspan hash`) to check the files against; implies verify
    tensors    shell-style patterns (a list of strings): only the tensors one matches are read
    populate   true: with mmap, read the mapped bytes in before handing them out (auto does so by itself for
               cold files on a local disk)
    allow_missing  shell-style patterns of model parameters the checkpoint may leave unfilled (every
               parameter of an unquantized model must be filled otherwise; a quantized model gets vLLM's check)
    signature  an OpenSSF model signature (a Sigstore bundle, `rootspan sign` or `model_signing sign`) over the
               model folder: checked before anything is read, and every file it names hashed as the load places it
    public_key the PEM public key a key-signed `signature` is checked with
    certificate_chain  a PEM certificate file, or a list of them, to trust for a `signature` made with a
               certificate (one of public_key and certificate_chain goes with signature)
    ignore_unsigned_files  true: files of the folder the signature does not name are let be

An unknown option or a bad value fails engine start-up naming it.

Nothing here imports vLLM until vLLM calls `register()` (or `loader_class()` is asked for): `import rootspan`
and `import rootspan.vllm` work without vLLM installed. Option checking (`parse_options`) and location
resolution (`resolve`) need neither vLLM nor torch.
"""
import dataclasses
import fnmatch
import os
import time

__all__ = ["LOAD_FORMAT", "OPTIONS", "SIGNATURE_OPTIONS", "Options", "parse_options", "resolve", "register",
           "loader_class"]

LOAD_FORMAT = "rootspan"
STRATEGIES = ("auto", "mmap", "read", "direct")
# option -> what it takes (for the messages)
OPTIONS = {
    "strategy": "one of " + ", ".join(repr(s) for s in STRATEGIES),
    "verify": "a bool",
    "digests": "the path of a digest manifest (a string)",
    "tensors": "a list of shell-style patterns (strings)",
    "populate": "a bool",
    "allow_missing": "a list of shell-style patterns of model parameter names (strings)",
    "signature": "the path of a model signature bundle (a string)",
    "public_key": "the path of a PEM public key (a string)",
    "certificate_chain": "the path of a PEM certificate file, or a list of them (strings)",
    "ignore_unsigned_files": "a bool",
}
# The options of signed models (Context.load's signature=, public_key=, certificate_chain=, ignore_unsigned_files=).
SIGNATURE_OPTIONS = {key: OPTIONS[key] for key in ("signature", "public_key", "certificate_chain",
                                                   "ignore_unsigned_files")}


class OptionError(ValueError):
    """A model_loader_extra_config key or value the rootspan load format refuses."""


@dataclasses.dataclass(frozen=True)
class Options:
    strategy: str = "auto"
    verify: bool = False
    digests: "str | None" = None
    tensors: "tuple | None" = None
    populate: bool = False
    allow_missing: "tuple | None" = None
    signature: "str | None" = None
    public_key: "str | None" = None
    certificate_chain: "tuple | None" = None
    ignore_unsigned_files: bool = False

    def load_arguments(self):
        """The keyword arguments of Context.load these options make."""
        arguments = dict(strategy=self.strategy, verify=self.verify or self.digests is not None,
                         digests=self.digests, tensors=list(self.tensors) if self.tensors is not None else None,
                         populate=self.populate)
        if self.signature is not None:
            arguments.update(signature=self.signature, public_key=self.public_key,
                             certificate_chain=list(self.certificate_chain) if self.certificate_chain else None,
                             ignore_unsigned_files=self.ignore_unsigned_files)
        return arguments


def _valid_list():
    return ", ".join(OPTIONS)


def _bad(key, value, wanted):
    return OptionError(f"rootspan load format: model_loader_extra_config[{key!r}] must be {wanted}; "
                       f"got {value!r} ({type(value).__name__})")


def parse_options(extra_config):
    """Options from vLLM's model_loader_extra_config (a dict; None is {}). Raises OptionError naming the key
    and what it takes, listing the valid keys for an unknown one."""
    if extra_config is None:
        extra_config = {}
    if not isinstance(extra_config, dict):
        raise OptionError(f"rootspan load format: model_loader_extra_config must be a dict of options "
                          f"({_valid_list()}); got {type(extra_config).__name__}")
    values = {}
    for key, value in extra_config.items():
        if key not in OPTIONS:
            raise OptionError(f"rootspan load format: unknown option {key!r} in model_loader_extra_config; "
                              f"valid options: {_valid_list()}")
        if key == "strategy":
            if value not in STRATEGIES:
                raise _bad(key, value, OPTIONS[key])
        elif key in ("verify", "populate", "ignore_unsigned_files"):
            if not isinstance(value, bool):
                raise _bad(key, value, OPTIONS[key])
        elif key in ("digests", "signature", "public_key"):
            if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
                raise _bad(key, value, OPTIONS[key])
            value = os.fspath(value)
        elif key == "certificate_chain":
            if isinstance(value, (str, os.PathLike)):
                value = [value]
            if not isinstance(value, (list, tuple)) or not value \
                    or not all(isinstance(p, (str, os.PathLike)) and os.fspath(p) for p in value):
                raise _bad(key, extra_config[key], OPTIONS[key] + ", at least one, none empty")
            value = tuple(os.fspath(p) for p in value)
        elif key in ("tensors", "allow_missing"):
            if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value \
                    or not all(isinstance(p, str) and p for p in value):
                raise _bad(key, value, OPTIONS[key] + ", at least one, none empty")
            value = tuple(value)
        values[key] = value
    options = Options(**values)
    if options.signature is None:
        given = [key for key in ("public_key", "certificate_chain", "ignore_unsigned_files")
                 if values.get(key) not in (None, False)]
        if given:
            raise OptionError(f"rootspan load format: model_loader_extra_config[{given[0]!r}] checks a model "
                              f"signature, but 'signature' (the path of the signature bundle) is not given")
    elif options.public_key is None and options.certificate_chain is None:
        raise OptionError(f"rootspan load format: model_loader_extra_config['signature'] ({options.signature!r}) "
                          f"needs the key it was signed with ('public_key': a PEM file) or the certificates to "
                          f"trust ('certificate_chain': PEM files); got neither")
    if options.populate and options.strategy not in ("mmap", "auto"):
        raise OptionError(f"rootspan load format: model_loader_extra_config['populate'] applies to mapped "
                          f"loads (strategy 'mmap' or 'auto'); got strategy {options.strategy!r}")
    return options


def _hub_cache(download_dir=None):
    """The Hugging Face hub cache folder: download_dir, else huggingface_hub's (HF_HUB_CACHE, HF_HOME/hub,
    ~/.cache/huggingface/hub)."""
    if download_dir:
        return os.path.expanduser(download_dir)
    try:
        from huggingface_hub import constants
        return constants.HF_HUB_CACHE
    except Exception:
        pass
    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def resolve(model, revision=None, download_dir=None):
    """(path, revision) rootspan reads for vLLM's model: a local file, folder, index file or Hugging Face cache
    repository folder as given (revision kept for a cache repository); else a repository id ("org/name") looked
    up in the local Hugging Face cache (download_dir, else the hub cache), at revision (None: refs/main).
    rootspan never downloads: a repository that is not in the cache is FileNotFoundError naming where it
    looked."""
    if not isinstance(model, (str, os.PathLike)) or not os.fspath(model):
        raise ValueError(f"rootspan load format: the model must be a path or a repository id, got {model!r}")
    model = os.fspath(model)
    local = os.path.expanduser(model)
    if os.path.exists(local):
        return local, revision
    parts = model.split("/")
    if len(parts) == 2 and all(parts) and not model.startswith((".", "/", "~")):
        cache = _hub_cache(download_dir)
        repository = os.path.join(cache, "models--" + model.replace("/", "--"))
        if os.path.isdir(repository):
            return repository, revision
        raise FileNotFoundError(
            f"rootspan load format: {model!r} is neither a local path nor a repository in the local Hugging Face "
            f"cache (looked for {repository}); rootspan reads local files only and downloads nothing: fetch it "
            f"first (huggingface-cli download {model}) or pass its folder")
    raise FileNotFoundError(f"rootspan load format: no such file or folder: {local!r}")


def register():
    """The vllm.general_plugins entry point: registers load_format "rootspan" in this process."""
    loader_class()


_LOADER = None


def loader_class():
    """The vLLM loader class (a BaseModelLoader), registered as load format "rootspan" on first call."""
    global _LOADER
    if _LOADER is None:
        _LOADER = _make_loader_class()
    return _LOADER


def __getattr__(name):
    if name == "RootspanModelLoader":
        return loader_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


class LoadStats:
    """What one load did, for the log line: filled while the iteration runs."""

    def __init__(self, path):
        self.path = path
        self.started = time.perf_counter()
        self.header_seconds = 0.0
        self.context_seconds = 0.0
        self.load_seconds = 0.0
        self.tensors = 0
        self.bytes = 0
        self.files = 0
        self.report = None
        self.digests = None

    def line(self, total_seconds, model_seconds, what="Loading weights"):
        report = self.report or {}
        strategy = report.get("strategy", "?")
        requested = report.get("requested", "?")
        reason = report.get("reason", "")
        rate = self.bytes / total_seconds / 1e9 if total_seconds > 0 else float("inf")
        verified = ""
        if self.digests and self.digests.get("checked"):
            verified = (f"; verified {len(self.digests.get('verified', []))} digests, "
                        f"{len(self.digests.get('unverifiable', []))} not verifiable")
        why = reason if reason.startswith(requested + ":") else f"asked {requested}: {reason}"
        return (f"{what} took {total_seconds:.2f} seconds (rootspan: {self.tensors} tensors, "
                f"{_human_bytes(self.bytes)} from {self.files} file{'' if self.files == 1 else 's'} of {self.path}, {rate:.2f} GB/s; strategy "
                f"{strategy} ({why}); phases: headers {self.header_seconds:.3f} s, context "
                f"{self.context_seconds:.3f} s, load {self.load_seconds:.3f} s, model.load_weights "
                f"{model_seconds:.3f} s{verified})")


def iterate(path, revision=None, options=None, stats=None):
    """(name, tensor) of a checkpoint for a vLLM model's load_weights, in file order: CPU tensors each of which
    stays valid after the iteration moves on (zero-copy views of copy-on-write mappings, or memory of their
    own; never a reused buffer), given back as the model drops them. stats (a LoadStats) is filled in."""
    import torch
    from . import _contexts
    from .inspect import inspect
    from .torch import _selected_tensors
    options = options or Options()
    stats = stats or LoadStats(path)
    started = time.perf_counter()
    entries = inspect(path, revision)["tensors"]
    stats.header_seconds = time.perf_counter() - started
    started = time.perf_counter()
    context = _contexts.host()
    stats.context_seconds = time.perf_counter() - started
    started = time.perf_counter()
    weights = context.load(path, provider="host", revision=revision, **options.load_arguments())
    stats.load_seconds = time.perf_counter() - started
    try:
        stats.report = weights.read_report
        stats.digests = weights.digests
        files = set()

        def counted(selected):
            """(name, tensor) of an (entry, tensor), the entry counted in stats."""
            entry = selected[0]
            stats.tensors += 1
            stats.bytes += entry.get("bytes", 0)
            files.add(entry.get("file"))
            stats.files = len(files)
            return entry["name"], selected[1]

        # map, not a loop: no local of this frame holds a tensor while it is suspended, so each goes back as
        # soon as the engine drops it (rootspan.torch.in_file_order)
        yield from map(counted, _selected_tensors(weights, entries, options.tensors, torch.device("cpu")))
    finally:
        weights.close()


def _make_loader_class():
    import torch  # noqa: F401  (vLLM needs it anyway)
    from vllm.logger import init_logger
    from vllm.model_executor.model_loader import register_model_loader
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader

    logger = init_logger("vllm.model_executor.model_loader.rootspan")

    class RootspanModelLoader(BaseModelLoader):
        """vLLM load format "rootspan": weights read by rootspan (rootspan.vllm's docstring lists the options)."""

        def __init__(self, load_config):
            super().__init__(load_config)
            self.options = parse_options(load_config.model_loader_extra_config)

        def _source(self, model_config):
            model = getattr(model_config, "model_weights", None) or model_config.model
            return resolve(model, getattr(model_config, "revision", None), self.load_config.download_dir)

        def download_model(self, model_config):
            """Resolves the model to local files (a repository id in the local Hugging Face cache) and checks
            every header; downloads nothing."""
            from .inspect import inspect
            path, revision = self._source(model_config)
            inspect(path, revision)

        def get_all_weights(self, model_config, model=None):
            """(name, tensor) of the model's checkpoint (what vLLM's in-place reload consumes); logs the
            load's line once the consumer has taken every tensor."""
            path, revision = self._source(model_config)
            stats = LoadStats(path)
            started = time.perf_counter()
            yield from iterate(path, revision, self.options, stats)
            total = time.perf_counter() - started
            model_seconds = max(0.0, total - stats.header_seconds - stats.context_seconds - stats.load_seconds)
            logger.info(stats.line(total, model_seconds, "Reading weights for a reload"))

        def load_weights(self, model, model_config):
            path, revision = self._source(model_config)
            stats = LoadStats(path)
            started = time.perf_counter()
            loaded = model.load_weights(iterate(path, revision, self.options, stats))
            total = time.perf_counter() - started
            model_seconds = max(0.0, total - stats.header_seconds - stats.context_seconds - stats.load_seconds)
            logger.info(stats.line(total, model_seconds))
            if loaded is not None:
                self._check_all_loaded(model, set(loaded), path, getattr(model_config, "quantization", None) is not None)

        def _check_all_loaded(self, model, loaded, path, quantized):
            """A parameter the checkpoint did not fill fails start-up, naming it: every parameter of an
            unquantized model but those allow_missing matches (vLLM's default loader exempts whole layers
            that process their weights after loading, the linear layers among them; this does not); a quantized
            model gets vLLM's own check, with its exemptions."""
            if quantized:
                try:
                    from vllm.model_executor.model_loader.default_loader import DefaultModelLoader
                    DefaultModelLoader.track_weights_loading(self, model, set(loaded), quantized=True)
                    return
                except (ImportError, AttributeError):
                    return
                except ValueError as error:
                    raise ValueError(f"rootspan load format: the checkpoint {path} did not fill every parameter "
                                     f"of the model: {error}") from error
            allowed = self.options.allow_missing or ()
            missing = sorted(name for name, _ in model.named_parameters()
                             if name not in loaded and not any(fnmatch.fnmatchcase(name, p) for p in allowed))
            if missing:
                selection = ("" if self.options.tensors is None
                             else f"; model_loader_extra_config['tensors'] selected {list(self.options.tensors)}")
                shown = ", ".join(missing[:20]) + (f", ... ({len(missing)} in all)" if len(missing) > 20 else "")
                raise ValueError(f"rootspan load format: the checkpoint {path} did not fill every parameter of the "
                                 f"model{selection}: {len(missing)} not filled: {shown} (model_loader_extra_config"
                                 f"['allow_missing'] takes patterns of parameters that may stay unfilled)")

    register_model_loader(LOAD_FORMAT)(RootspanModelLoader)
    return RootspanModelLoader
