"""Process-wide state shared by the group layer: the lock that serialises RELIC calls.

RELIC (inside petrelic) keeps one global context and cffi releases the GIL around every call,
so two threads inside RELIC at once can corrupt results. Every entry into RELIC from this
package holds `LOCK`.
"""

import threading

LOCK = threading.RLock()
