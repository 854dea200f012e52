/* static_floor: the smallest CNI plugin there can be — it answers VERSION with one line and exits.
 * The benchmark links it statically (glibc, no C++ runtime) and execs it exactly as it execs
 * manifold, so its wall and CPU time are this machine's floor for any plugin run as a process: the
 * exec, the page faults of a static binary's start-up, exit and reaping. On a VM whose page faults
 * and system calls are slow (nested virtualisation), that floor alone can exceed the budgets the
 * benchmark prints; reading manifold's figures against it says how much is manifold's own.
 */
#include <string.h>
#include <unistd.h>

int main(void) {
  static const char answer[] =
      "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}\n";
  return write(1, answer, strlen(answer)) == (ssize_t)strlen(answer) ? 0 : 1;
}
