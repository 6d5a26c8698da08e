/*
 * The accgen driver interface.
 *
 * Every backend that accgen generates talks to its device through this C
 * interface and nothing else: devices, memory, copies, streams, events, kernel
 * launches and error strings, in the spirit of a CUDA-like runtime. accgen
 * ships one implementation, the CPU emulator in runtime_emulator/; a vendor
 * replaces it with a library over their real driver that exports the same
 * symbols, and the generated code does not change.
 *
 * --8<-- [start:driver-contract]
 * Contract for every function:
 *  - it returns an accError_t and never throws, aborts or exits on bad input;
 *  - "the current device" is per host thread and starts at device 0;
 *  - a NULL accStream_t means the default stream of the current device;
 *  - errors raised inside a launched kernel are sticky on their stream and are
 *    returned by the next accStreamSynchronize / accStreamQuery on it (and by
 *    accDeviceSynchronize, and by a synchronous accMemcpy / accMemset for the
 *    current device's default stream); once returned they are cleared. A
 *    stream that waits (accStreamWaitEvent) for work that failed fails too,
 *    as every stream of a CUDA context does after a device-side error: what
 *    it runs next would read what the failed work left.
 * --8<-- [end:driver-contract]
 *
 * docs/driver-interface.md documents each function in prose.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

typedef enum accError {
  accSuccess = 0,
  accErrorInvalidValue = 1,     /* an argument is out of range or NULL */
  accErrorInvalidDevice = 2,    /* a device index outside [0, count) */
  accErrorMemoryAllocation = 3, /* out of device or host memory */
  accErrorNotReady = 4,         /* queried work has not completed yet */
  accErrorInvalidHandle = 5,    /* unknown stream, event or pointer */
  accErrorLaunchFailure = 6,    /* a launched kernel reported an error */
  accErrorNotInitialized = 7,   /* accInit given after first use */
  /* A call a capturing stream does not allow (a synchronization, a launch
   * whose arguments the driver cannot keep, pageable host memory); the
   * capture is invalidated. */
  accErrorStreamCaptureUnsupported = 8,
  /* The capture was invalidated by an earlier error. */
  accErrorStreamCaptureInvalidated = 9,
  /* A stream that joined the capture did not join back before it ended. */
  accErrorStreamCaptureUnjoined = 10,
  /* The driver does not implement this optional part of the interface. */
  accErrorNotSupported = 11,
} accError_t;

/* A static, human-readable message for `error` (never NULL). */
const char* accGetErrorString(accError_t error);
/* The enumerator's name, e.g. "accErrorInvalidDevice" (never NULL). */
const char* accGetErrorName(accError_t error);

/* -------------------------------------------------------- initialisation */

/* Hints a backend gives the driver before first use. A field of 0 keeps the
 * driver's own default. A real driver may ignore them; the emulator uses them
 * as its defaults, which environment variables override (see
 * docs/driver-interface.md: ACCGEN_EMU_DEVICE_COUNT, ACCGEN_EMU_MEMORY_BYTES).
 */
typedef struct accInitParams {
  int deviceCount;          /* number of devices */
  uint64_t memoryPerDevice; /* device memory capacity in bytes */
} accInitParams;

/* Optional; must come before any other call except the error-string ones,
 * otherwise it returns accErrorNotInitialized and changes nothing. NULL or a
 * negative device count is accErrorInvalidValue. */
accError_t accInit(const accInitParams* params);

/* ----------------------------------------------------------------- devices */

typedef struct accDeviceProp {
  char name[256];
  uint64_t totalGlobalMem; /* bytes */
  int multiProcessorCount; /* compute units */
  int major;               /* capability version */
  int minor;
} accDeviceProp;

accError_t accGetDeviceCount(int* count);
accError_t accGetDevice(int* device);
accError_t accSetDevice(int device);
accError_t accGetDeviceProperties(accDeviceProp* prop, int device);
/* Waits for all work on every stream of the current device. */
accError_t accDeviceSynchronize(void);

/* ------------------------------------------------------------------ memory */

typedef enum accMemcpyKind {
  accMemcpyHostToHost = 0,
  accMemcpyHostToDevice = 1,
  accMemcpyDeviceToHost = 2,
  accMemcpyDeviceToDevice = 3,
  accMemcpyDefault = 4, /* inferred from the pointers */
} accMemcpyKind;

typedef enum accMemoryType {
  accMemoryTypeUnregistered =
      0,                   /* ordinary host memory, unknown to the driver */
  accMemoryTypeHost = 1,   /* pinned host memory from accMallocHost */
  accMemoryTypeDevice = 2, /* device memory from accMalloc */
} accMemoryType;

typedef struct accPointerAttributes {
  accMemoryType type;
  int device;        /* owning device, -1 for host memory */
  void* basePointer; /* start of the allocation holding the pointer */
  size_t allocationSize;
} accPointerAttributes;

/* --8<-- [start:driver-memory] */
/* Device memory on the current device. A zero size yields NULL and success. */
accError_t accMalloc(void** ptr, size_t size);
/* Frees device memory; NULL is a no-op; unknown or freed pointers (and
 * pointers into the middle of an allocation) are accErrorInvalidValue. Waits
 * for pending work on the allocation's device first. */
accError_t accFree(void* ptr);
accError_t accMallocHost(void** ptr, size_t size);
accError_t accFreeHost(void* ptr);
accError_t accMemGetInfo(size_t* free_bytes, size_t* total_bytes);
accError_t accPointerGetAttributes(accPointerAttributes* attributes,
                                   const void* ptr);
/* --8<-- [end:driver-memory] */

typedef struct accStream_st* accStream_t;

accError_t accMemset(void* dev_ptr, int value, size_t count);
accError_t accMemsetAsync(void* dev_ptr, int value, size_t count,
                          accStream_t stream);
/* Copies `count` bytes; the kind must match the pointers (a device pointer
 * where the kind says host is accErrorInvalidValue). Device-to-device works
 * within a device and across devices. The async form is truly asynchronous
 * for device and pinned memory; ordinary (pageable) host memory is consumed
 * (source) or filled (destination) before it returns, as with CUDA. */
accError_t accMemcpy(void* dst, const void* src, size_t count,
                     accMemcpyKind kind);
accError_t accMemcpyAsync(void* dst, const void* src, size_t count,
                          accMemcpyKind kind, accStream_t stream);

/* ----------------------------------------------------------------- streams */

/* --8<-- [start:driver-streams] */
typedef struct accEvent_st* accEvent_t;

/* Lower numbers are higher priorities, as in CUDA: greatest <= least.
 * accStreamCreateWithPriority takes flags 0 and clamps the priority into the
 * range. */
accError_t accDeviceGetStreamPriorityRange(int* least, int* greatest);
accError_t accStreamCreate(accStream_t* stream);
accError_t accStreamCreateWithPriority(accStream_t* stream, unsigned flags,
                                       int priority);
/* Waits for the stream's pending work, then destroys it. */
accError_t accStreamDestroy(accStream_t stream);
/* accErrorNotReady while work is pending; once all of it completed, the
 * stream's sticky kernel error if there is one, else accSuccess. */
accError_t accStreamQuery(accStream_t stream);
accError_t accStreamSynchronize(accStream_t stream);
accError_t accStreamWaitEvent(accStream_t stream, accEvent_t event,
                              unsigned flags);
accError_t accStreamGetDevice(accStream_t stream, int* device);
accError_t accStreamGetPriority(accStream_t stream, int* priority);
/* The default stream of `device` (never NULL on success): the same handle
 * for the life of the process, which the runtime keeps. */
accError_t accGetDefaultStream(int device, accStream_t* stream);
/* --8<-- [end:driver-streams] */

/* --8<-- [start:driver-launch] */
/* An emulated kernel: runs in submission order on its stream, on the
 * stream's worker or on a host thread (see accLaunchKernel). A non-success
 * return becomes the stream's sticky error. */
typedef accError_t (*accKernelFn_t)(void* user_data);

/* Enqueues `fn(user_data)` on `stream`; returns without waiting for work
 * queued before it. For its duration the kernel may read and write the
 * device allocations that hold the `num_buffers` pointers in `buffers` (and
 * no others): see Note [Device memory access] (the emulator's
 * src/allocation.cpp, quoted in docs/driver-interface.md). NULL entries are
 * skipped; a pointer that is not in any allocation is
 * accErrorInvalidValue. The driver may run the kernel before returning when
 * nothing is queued before it: the emulator does for a kernel whose
 * allocations hold at most 1 MiB (Note [Small work on an idle stream]), so a
 * kernel that waits for something outside its stream (a host thread,
 * another process) is launched with accLaunchKernelEx and
 * accLaunchWaitsOutside. */
accError_t accLaunchKernel(accStream_t stream, accKernelFn_t fn,
                           void* user_data, const void* const* buffers,
                           size_t num_buffers);

enum {
  accLaunchDefault = 0x0,
  /* The kernel waits for work outside its stream: it always runs on the
   * stream's own worker, never on the launching thread. */
  accLaunchWaitsOutside = 0x1,
  /* Run the kernel now, on the launching thread, or not at all: when the
   * driver can run it there without waiting for the stream (the emulator:
   * nothing is queued on it), it does and returns what accLaunchKernelSync
   * would; otherwise it launches nothing and returns accErrorNotReady. A
   * driver may always decline. For a caller that must not wait while it
   * holds a lock the stream's queued work may take (Python's GIL). */
  accLaunchIfIdle = 0x2
};

/* accLaunchKernel with flags (accLaunchDefault, accLaunchWaitsOutside or
 * accLaunchIfIdle); other flags and combinations are
 * accErrorInvalidValue. */
accError_t accLaunchKernelEx(accStream_t stream, accKernelFn_t fn,
                             void* user_data, const void* const* buffers,
                             size_t num_buffers, unsigned flags);

/* Runs `fn(user_data)` on `stream` after the work queued there before it and
 * returns once it finished: accLaunchKernel followed by accStreamSynchronize
 * in one call, with the same result (the kernel's error, or the stream's
 * earlier sticky error first). The driver may run the kernel on the calling
 * thread; the emulator does when the stream is idle, which saves the two
 * hand-offs to and from the stream's worker. For kernels whose caller waits
 * anyway, such as a kernel that reads the caller's stack frame. */
accError_t accLaunchKernelSync(accStream_t stream, accKernelFn_t fn,
                               void* user_data, const void* const* buffers,
                               size_t num_buffers);

/* From inside a host kernel (accLaunchKernel and its kin) running on the
 * calling thread: gives the kernel access to the allocation holding `ptr`
 * until it returns, as if it were one of its buffers. For device memory
 * the kernel obtains while it runs (a CPU kernel's results allocated on
 * the device). accErrorInvalidValue if `ptr` lies in no allocation,
 * accErrorNotReady outside a host kernel, accErrorNotSupported where the
 * host cannot address device memory. */
accError_t accKernelAddBuffer(const void* ptr);

/* Releases the `user_data` of accLaunchKernelOwned. */
typedef void (*accReleaseFn_t)(void* user_data);

/* accLaunchKernel for a kernel the driver may run more than once: it calls
 * `fn(user_data)` each time the work runs (once, or on every launch of a
 * graph that captured it) and `release(user_data)` once, when it needs
 * neither any more (NULL: nothing to release). The only kernel launch a
 * capturing stream accepts. */
accError_t accLaunchKernelOwned(accStream_t stream, accKernelFn_t fn,
                                void* user_data, accReleaseFn_t release,
                                const void* const* buffers, size_t num_buffers);
/* --8<-- [end:driver-launch] */

/* ------------------------------------------------------------- device code */

/* --8<-- [start:driver-device-code] */
typedef enum accDeviceAttr {
  /* 1 if the host may read and write device memory through device pointers
   * (unified memory; the emulator, whose device memory is host memory), 0 if
   * only the driver's copies and memsets and the device's own functions
   * (accLaunchFunction) reach it (the remote driver; most accelerators).
   * Where it is 0, a host kernel (accLaunchKernel and its kin) given a
   * device buffer is refused with accErrorNotSupported. */
  accDevAttrHostAddressable = 0,
} accDeviceAttr;

/* The value of `attribute` for `device`. */
accError_t accDeviceGetAttribute(int* value, accDeviceAttr attribute,
                                 int device);

/* Device code comes in modules, loaded by path, and is launched by name,
 * as with CUDA's driver API. A module of the emulator and of the remote
 * driver is a shared library of functions declared with ACC_DEVICE_FUNCTION
 * (accgen/device.h); the remote driver loads it into its device process. */
typedef struct accModule_st* accModule_t;
typedef struct accFunction_st* accFunction_t;

/* accErrorInvalidValue if `path` cannot be loaded as a module. */
accError_t accModuleLoad(accModule_t* module, const char* path);
/* Unloads `module` once the work launched from it completed; its functions
 * become invalid. */
accError_t accModuleUnload(accModule_t module);
/* The device function `name` of `module` (accErrorInvalidValue if it has
 * none of that name). */
accError_t accModuleGetFunction(accFunction_t* function, accModule_t module,
                                const char* name);
/* Queues `function` on `stream` with a copy of the `args_size` bytes at
 * `args` (its argument block: device pointers, sizes, scalars, laid out as
 * the function reads them), and returns without waiting. Device pointers
 * in the block are used by the device as they are. The function's error is
 * sticky on the stream, as a kernel's. A capturing stream records it. */
accError_t accLaunchFunction(accFunction_t function, const void* args,
                             size_t args_size, accStream_t stream);
/* --8<-- [end:driver-device-code] */

/* ------------------------------------------------------------------ events */

/* --8<-- [start:driver-events] */
enum { accEventDefault = 0x0, accEventDisableTiming = 0x2 };

accError_t accEventCreate(accEvent_t* event);
accError_t accEventCreateWithFlags(accEvent_t* event, unsigned flags);
accError_t accEventDestroy(accEvent_t event);
accError_t accEventRecord(accEvent_t event, accStream_t stream);
/* accSuccess once the recorded work completed (or never recorded),
 * accErrorNotReady otherwise. */
accError_t accEventQuery(accEvent_t event);
accError_t accEventSynchronize(accEvent_t event);
/* Milliseconds between two completed, timed events. */
accError_t accEventElapsedTime(float* ms, accEvent_t start, accEvent_t end);
/* --8<-- [end:driver-events] */

/* ------------------------------------------------------------------ graphs */

/* --8<-- [start:driver-graphs] */
/* Optional, shaped like CUDA's stream capture: a driver without graphs
 * returns accErrorNotSupported from each of these, and the backend says that
 * graphs are unsupported on the device. While a stream captures, the
 * kernels (accLaunchKernelOwned), copies, memsets and event records queued
 * on it are recorded, not run; a stream that waits for an event recorded in
 * the capture joins it, and must be joined back (the capturing stream waits
 * for an event recorded on it) before the capture ends. A launched graph
 * runs the recorded work in order on the stream it is launched on. */
typedef struct accGraph_st* accGraph_t;
typedef struct accGraphExec_st* accGraphExec_t;

typedef enum accStreamCaptureMode {
  /* While any stream of the device captures, synchronizing calls on it
   * (accDeviceSynchronize, accMemcpy, accMemset) fail and invalidate it. */
  accStreamCaptureModeGlobal = 0,
  accStreamCaptureModeThreadLocal = 1, /* the emulator: as Global */
  accStreamCaptureModeRelaxed = 2,     /* only the stream's own calls fail */
} accStreamCaptureMode;

typedef enum accStreamCaptureStatus {
  accStreamCaptureStatusNone = 0,
  accStreamCaptureStatusActive = 1,
  accStreamCaptureStatusInvalidated = 2,
} accStreamCaptureStatus;

/* Starts capturing on `stream`, which must not be a default stream
 * (accErrorStreamCaptureUnsupported) nor capture already. */
accError_t accStreamBeginCapture(accStream_t stream, accStreamCaptureMode mode);
/* Ends the capture begun on `stream` and returns its graph; an invalidated
 * or unjoined capture returns its error and no graph (NULL). */
accError_t accStreamEndCapture(accStream_t stream, accGraph_t* graph);
/* Whether `stream` captures, and the capture's id (unique in the process,
 * 0 when not capturing); `id` may be NULL. */
accError_t accStreamGetCaptureInfo(accStream_t stream,
                                   accStreamCaptureStatus* status,
                                   unsigned long long* id);
/* The number of recorded operations of `graph`. */
accError_t accGraphGetNodeCount(accGraph_t graph, size_t* count);
accError_t accGraphDestroy(accGraph_t graph);
/* An executable graph; it stays valid after accGraphDestroy(graph). */
accError_t accGraphInstantiate(accGraphExec_t* exec, accGraph_t graph);
/* Queues the graph's work on `stream`, after the work queued there. */
accError_t accGraphLaunch(accGraphExec_t exec, accStream_t stream);
/* Waits for the launches of `exec` to finish, then destroys it. */
accError_t accGraphExecDestroy(accGraphExec_t exec);
/* --8<-- [end:driver-graphs] */

#ifdef __cplusplus
} /* extern "C" */
#endif
