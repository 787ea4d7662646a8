"""The torch stack's manifest: eager torch, inductor (`torch.compile`) and FSDP2."""

from implementations.manifests import (
    BenchEntry,
    CacheEntry,
    CiJob,
    Manifest,
    MutantEntry,
    PortEntry,
)

_HERE = "implementations.stacks.torch"
#: torch's CPU wheel, not PyPI's multi-GB CUDA build (CI jobs that install torch).
CPU_WHEELS = "--extra-index-url https://download.pytorch.org/whl/cpu"

MANIFEST = Manifest(
    stack="torch",
    engine="torch",
    ports=(
        PortEntry("pytorch", f"{_HERE}.pytorch:PyTorch", "torch", ("torch",)),
        # The trainer's switch: torch's apply_activation_checkpointing (checkpoint_wrapper).
        PortEntry(
            "torch_ac_wrapper",
            f"{_HERE}.torch_ac_wrapper:TorchAcWrapper",
            "torch",
            ("torch",),
        ),
        PortEntry(
            "torch_compile",
            f"{_HERE}.torch_compile:TorchCompile",
            "torch",
            ("torch",),
            family="torch_compile",
        ),
        # Its gloo ranks are processes of their own: run by the scale profile.
        PortEntry(
            "torch_fsdp",
            f"{_HERE}.torch_fsdp:TorchFsdp",
            "torch",
            ("torch",),
            profile="scale",
            family="torch_fsdp",
            ranks_variable="REMAT_FSDP_RANKS",
            ranks_per_node=True,  # torchrun's --nproc-per-node
        ),
    ),
    bench=(
        BenchEntry(
            "torch",
            f"{_HERE}.block",
            quick=True,
            notes={
                "saved_bytes": "an outer saved_tensors_hooks plus the outputs a "
                "selective-checkpoint policy "
                "caches, one per storage",
                "temp_bytes": "none: eager, no compiled program",
                "peak_bytes": "the most CPU bytes alive from the start of the step's "
                "torch.autograd.grad to its return, above what was live before the step, from "
                "torch.profiler(profile_memory=True); it includes what the forward pass kept "
                "and the parameter gradients the step returns",
                "matmuls": "aten mm/addmm calls in the step, counted by a TorchDispatchMode",
                "save-mm": "selective checkpointing, MUST_SAVE for mm/addmm",
            },
        ),
        BenchEntry(
            "torch_compile",
            f"{_HERE}.compiled_bench",
            notes={
                "saved_bytes": "what AOTAutograd's partitioned forward graph returns for the "
                "backward graph,"
                " as inductor compiled it",
                "temp_bytes": "none: inductor reports no such figure",
                "peak_bytes": "as eager torch: inductor allocates through the same allocator",
                "matmuls": "the aten mm/addmm nodes of the forward and backward graphs inductor "
                "compiled"
                " (one external kernel call each)",
                "save-mm": "selective checkpointing, MUST_SAVE for mm/addmm, compiled",
            },
        ),
    ),
    mutants=(
        MutantEntry(
            "pytorch_own_model_no_checkpoint",
            f"{_HERE}.pytorch_mutants:OwnModelWithoutCheckpoint",
            "forward, vjp and nn_checkpoint_forward overridden by a plain MLP of the port's own, "
            "while the base's model checkpoints",
            "pytorch",
            killed_by="e",
        ),
        MutantEntry(
            "composed_reruns_declared_free",
            f"{_HERE}.pytorch_mutants:RerunsWhileDeclaringNone",
            "declares that torch removes the nested region's duplicate work (early stop) but "
            "runs the forward three times",
            "pytorch",
            killed_by="k",
        ),
        MutantEntry(
            "composed_second_wrap_drops_region",
            f"{_HERE}.pytorch_mutants:SecondWrapDropsTheRegion",
            "the second wrap drops the inner region: everything is saved",
            "pytorch",
            killed_by="k",
        ),
        MutantEntry(
            "composed_recompute_other_parameters",
            f"{_HERE}.pytorch_mutants:NestedRecomputeDrawsOtherParameters",
            "the recompute under nesting draws other parameters: the values differ",
            "pytorch",
            killed_by="k",
        ),
        MutantEntry(
            "composed_declaration_breaks_rule",
            f"{_HERE}.pytorch_mutants:DeclaresFewerForwardRuns",
            "a composition declaration in which wrapping twice runs the forward fewer times",
            "pytorch",
            killed_by="k",
        ),
        MutantEntry(
            "ac_wrapper_on_children",
            f"{_HERE}.torch_ac_wrapper_mutants:WrapperOnChildren",
            "checkpoint_wrapper on each Linear of the block instead of the block: relu's "
            "output is saved between them",
            "torch_ac_wrapper",
            killed_by="e",
        ),
        MutantEntry(
            "compiled_own_model_no_checkpoint",
            f"{_HERE}.torch_compile_mutants:OwnModelWithoutCheckpoint",
            "forward, vjp and nn_checkpoint_forward overridden by a plain eager MLP of the "
            "port's own, while the base's compiled model checkpoints",
            "torch_compile",
            killed_by="e",
        ),
        MutantEntry(
            "compiled_without_checkpoint",
            f"{_HERE}.torch_compile_mutants:CompiledWithoutCheckpoint",
            "torch.compile of the MLP module with no checkpoint in its forward",
            "torch_compile",
            killed_by="e",
        ),
        MutantEntry(
            "fsdp_no_checkpoint",
            f"{_HERE}.torch_fsdp_mutants:FsdpNoCheckpoint",
            "FSDP2 MLP over gloo ranks without torch.utils.checkpoint",
            "torch_fsdp",
            killed_by="e",
        ),
        MutantEntry(
            "budget_ignored",
            f"{_HERE}.torch_compile_mutants:BudgetIgnored",
            "torch.compile's budget(b) compiled as none, b ignored",
            "torch_compile",
            killed_by="j",
        ),
        MutantEntry(
            "stateful_policy_under_compile",
            f"{_HERE}.torch_compile_mutants:StatefulPolicyUnderCompile",
            "save_dots as a stateful torch policy ('save the first matmul'), under torch.compile",
            "torch_compile",
            killed_by="j",
        ),
    ),
    devices=f"{_HERE}.devices:probe",
    state=f"{_HERE}.state:settings",
    process_variables={
        "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR": "inductor writes the address of a function "
        "of torch's C++ library, in this process, before it loads each compiled library "
        "(torch/_inductor/codecache.py)",
    },
    device_module="torch",
    caches=(
        CacheEntry(
            "inductor",
            folder="torchinductor",
            setting="REMAT_TORCH_CACHE",
            directory_variable="TORCHINDUCTOR_CACHE_DIR",
            turn_off=f"{_HERE}.caches:turn_off",
            when_off={"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"},
            default_directory=f"{_HERE}.caches:default_directory",
            follows="JAX",
            writes_when_off=True,
            plain_paths=True,  # its g++ command line is unquoted: a space splits a path
        ),
    ),
    ci=CiJob("linux-cpu-torch", "ubuntu-24.04", CPU_WHEELS),
    named_only={
        "torch": "PyPI's torch wheels for Linux are CUDA builds of several GB; the CPU wheels "
        "come from PyTorch's own index (pip's --extra-index-url "
        "https://download.pytorch.org/whl/cpu)",
    },
)
