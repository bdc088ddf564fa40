#ifndef WARREN_CLIBFUZZER_SHIM_H
#define WARREN_CLIBFUZZER_SHIM_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (LLVM 11+), linked by `-sanitize=fuzzer`. Declared here, used only by the fuzz build of
// WarrenFuzz, whose own entry point calls it because SwiftPM aliases `main` to the target's entry function.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
