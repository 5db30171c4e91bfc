"""Which context the package's own helpers load through: rootspan.torch, rootspan.vllm and the safetensors
drop-in. One policy, here:

- Host memory (provider "host"): one context for the whole process, made on first use (again if someone
  closed it), with the host provider only: no manifest is read and no plugin is loaded, so a host load never
  starts a GPU runtime, and a process that loads many checkpoints pays for its context once.
- Any other provider ("auto", "cuda", a plugin's name): a context of its own for each load, with the
  manifests discovered as Context() does, so that the provider's plugin is found and started. It goes when
  the load's weights and every tensor of them are gone.

A caller's own Context objects are untouched by this: they are the caller's.
"""
import threading

_host = None
_host_lock = threading.Lock()


def host():
    """The process's host-only context."""
    global _host
    with _host_lock:
        if _host is None or _host.closed:
            from .context import Context
            _host = Context(manifests=[])
        return _host


def for_provider(provider):
    """The context a helper loads into `provider` through (see the policy above)."""
    if provider == "host":
        return host()
    from .context import Context
    return Context()
