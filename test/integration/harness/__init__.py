"""Test harness for manifold's integration tests (Python 3 standard library only).

netns.py     namespaces, links and their state (ip -j), stale-namespace sweeping
tree.py      per-test temporary directories and the state files tests inspect
configs.py   builders for delegate and manifold configs
runner.py    running the libcni driver and the manifold binary, parsing results and errors
testcase.py  the unittest base class (per-test node + pod namespaces), assertions, main()
ci.py        skips outside CI, failures under CI=true; exit statuses for CTest (77 = skipped)
"""
from . import ci, configs
from .configs import ALL_VERSIONS, MANIFOLD_NET, TUNED_MAC
from .netns import (HarnessError, Netns, add_dummy, add_veth, kernel_supports, process_gone,
                    unique_name)
from .runner import Driver, Run, run_plugin
from .testcase import (BRIDGE, IPVLAN_MASTER, MACVLAN_MASTER, ManifoldTestCase, find_interface,
                       ips_on, main, route_dsts)
from .tree import TempTree, cache_files, read_records, reservations
