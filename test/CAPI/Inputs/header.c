/* muir-c/Dialects.h in a C program: its declarations are C, and the
 * library gives the handles and the registration. */
#include "muir-c/Dialects.h"

#include <stdio.h>

int main(void) {
  MlirDialectHandle handles[] = {mlirGetDialectHandle__muir__(),
                                 mlirGetDialectHandle__muir_exec__()};
  int n = 0;
  for (int i = 0; i < 2; ++i)
    n += handles[i].ptr != NULL;
  void (*reg)(void) = mlirRegisterMuirPasses;
  printf("handles: %d, register: %s\n", n, reg ? "yes" : "no");
  return 0;
}
