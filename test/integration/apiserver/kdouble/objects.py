"""Generic typed objects served like the generic registry serves them: the kinds beyond pods.

A `Kind` describes one resource (its routes.Resource with scope, its List kind, the field labels
its LIST accepts) and the parts of its registry strategy that clients can observe: a `status`
subresource (status reset on create and kept by updates of the main resource; a status update
changes only the status), an immutable spec (422 on change), a `metadata.generation` bumped when
the spec changes. `object_routes` serves a kind (get, list, create, update, patch, delete, plus
status get/update/patch) and registers it in `KINDS`, by which the admin API and the `conflict`
fault find it. DRA's ResourceClaim and ResourceSlice (dra.py) are such kinds.

`ObjectStore` (one per `Store`, from `objects_of`) keeps the objects as the JSON the real server
returns and shares the pod store's lock and resourceVersion counter (package-internal), so every
resourceVersion stays cluster-wide and monotonic. Refusals are the real ones: 404 NotFound, 409
AlreadyExists / Conflict (stale resourceVersion, or none while `strict_resource_version` is on; UID
precondition), 400 for name/namespace mismatch and undecodable bodies, 422 Invalid for a missing
name, bad annotations or a changed immutable spec (that message is worded approximately: the real
one prints the Go struct). DELETE answers the deleted object (both DRA stores set
ReturnDeletedObject). Every change is a watch event of its kind (object_watch.py).
"""

from __future__ import annotations

import copy
import re
import secrets
import threading
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Optional

from . import k8s_status as st
from .access import RequestInfo
from .list_options import FieldLabels, OptionError, parse_list_options
from .object_watch import record_change, record_deletion, watch_handler
from .paging import page
from .patch import PatchError, apply_patch
from .routes import Call, Resource, RouteTable
from .store import Result, Store, now_rfc3339
from .validation import DecodeError, check_object, validate_annotations

_RV_RE = re.compile(r"^[0-9]+$")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # names.SimpleNameGenerator's alphabet


@dataclass(frozen=True)
class Kind:
    """A served kind and the strategy rules of its registry that the double applies."""
    resource: Resource
    list_kind: str
    fields: FieldLabels
    status: bool = False
    immutable_spec: bool = False
    generation: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """(group, plural): how KINDS and the store index the kind."""
        return self.resource.group, self.resource.plural

    @property
    def qualified_kind(self) -> str:
        """`Kind.group`, as Invalid errors name a GroupKind."""
        res = self.resource
        return f"{res.kind}.{res.group}" if res.group else res.kind

    def not_found(self, name: str) -> Result:
        """The real 404 for a missing object of this kind."""
        return 404, st.not_found(self.resource.plural, name, self.resource.group)

    def invalid(self, name: str, field: str, reason: str, message: str) -> Result:
        """A 422 Invalid on one field, with the GroupKind in message and details."""
        res = self.resource
        return 422, st.status(422, "Invalid",
                              f'{self.qualified_kind} "{name}" is invalid: {field}: {message}',
                              st.details(name, res.kind, res.group, causes=[
                                  {"reason": reason, "message": message, "field": field}]))


KINDS: dict[tuple[str, str], Kind] = {}
_STORES: "weakref.WeakKeyDictionary[Store, ObjectStore]" = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def kind_for_plural(plural: str) -> Optional[Kind]:
    """The served kind with this plural (any group), or None."""
    return next((k for k in KINDS.values() if k.resource.plural == plural), None)


def objects_of(store: Store) -> "ObjectStore":
    """The ObjectStore that lives beside `store` (created on first use)."""
    with _STORES_LOCK:
        found = _STORES.get(store)
        if found is None:
            found = _STORES[store] = ObjectStore(store)
        return found


def concurrent_write(store: Store, info: RequestInfo) -> None:
    """The `conflict` fault's other writer: bumps the resourceVersion of the object the request
    addresses (a pod or an object of a generic kind), so the request's own update gets a 409."""
    if info.group == "" and info.resource == "pods":
        store.bump_pod(info.namespace, info.name)
    elif (kind := KINDS.get((info.group, info.resource))) is not None:
        objects_of(store).bump(kind, info.namespace, info.name)


def _meta(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _list_item(obj: dict) -> dict:
    item = copy.deepcopy(obj)
    item.pop("kind", None)
    item.pop("apiVersion", None)
    return item


class ObjectStore:
    """The objects of every generic kind, beside one pod Store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = store._lock  # noqa: SLF001 (one lock and counter for the whole cluster)
        self._objects: dict[tuple, dict] = {}

    def _next_rv(self) -> str:
        return self._store._next_rv()  # noqa: SLF001

    @staticmethod
    def _key(kind: Kind, ns: str, name: str) -> tuple:
        return kind.key + (ns if kind.resource.namespaced else "", name)

    # ---- admin -----------------------------------------------------------------------------

    def put(self, kind: Kind, ns: str, name: str, obj: dict, raw: bool = False) -> dict:
        """Creates or replaces an object as given (spec and status included): the seed path of
        tests. Fills kind, apiVersion, name, namespace, uid, creationTimestamp (and generation)
        unless present and sets a new resourceVersion; `raw` stores `obj` verbatim but for the
        resourceVersion (when it has a metadata object), for hostile-data tests."""
        ns = ns if kind.resource.namespaced else ""
        with self._lock:
            key = self._key(kind, ns, name)
            prev = self._objects.get(key)
            obj = copy.deepcopy(obj)
            if not raw:
                obj = self._filled(kind, ns, name, obj, _meta(prev) if prev else {})
            if isinstance(obj.get("metadata"), dict):
                obj["metadata"]["resourceVersion"] = self._next_rv()
            self._objects[key] = obj
            record_change(self._store, kind, ns, obj, prev)
            return copy.deepcopy(obj)

    @staticmethod
    def _filled(kind: Kind, ns: str, name: str, obj: dict, old: dict) -> dict:
        """`obj` with kind, apiVersion and the metadata the server sets (in its field order);
        uid, creationTimestamp and generation as given, else kept from `old`, else new."""
        res = kind.resource
        given = obj.get("metadata") if obj.get("metadata") is not None else {}
        if not isinstance(given, dict):
            raise ValueError("metadata must be an object")
        meta: dict = {"name": name}
        if given.get("generateName"):
            meta["generateName"] = given["generateName"]
        if ns:
            meta["namespace"] = ns
        meta["uid"] = given.get("uid") or old.get("uid") or str(uuid.uuid4())
        meta["resourceVersion"] = ""
        if kind.generation or given.get("generation"):
            meta["generation"] = given.get("generation") or old.get("generation") or 1
        meta["creationTimestamp"] = (given.get("creationTimestamp") or
                                     old.get("creationTimestamp") or now_rfc3339())
        meta.update({k: v for k, v in given.items() if k not in meta and k != "namespace"})
        out = {"kind": res.kind, "apiVersion": res.group_version, "metadata": meta}
        out.update({k: v for k, v in obj.items() if k not in out})
        if kind.status:
            out.setdefault("status", {})
        return out

    def find(self, kind: Kind, ns: str, name: str) -> Optional[dict]:
        """The stored object, or None."""
        with self._lock:
            obj = self._objects.get(self._key(kind, ns, name))
            return copy.deepcopy(obj) if obj is not None else None

    def remove(self, kind: Kind, ns: str, name: str) -> bool:
        """Deletes an object; returns whether it existed."""
        return self.delete(kind, ns, name)[0] == 200

    def bump(self, kind: Kind, ns: str, name: str) -> bool:
        """Another writer's change: only the resourceVersion moves on."""
        with self._lock:
            obj = self._objects.get(self._key(kind, ns, name))
            if obj is None or not isinstance(obj.get("metadata"), dict):
                return False
            prev = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = self._next_rv()
            record_change(self._store, kind, ns, obj, prev)
            return True

    def open_watch(self, kind: Kind, watcher: Any) -> Any:
        """Registers a watch of `kind` with its current objects, atomically."""
        with self._lock:
            pairs = [(ons, o) for (g, p, ons, _), o in sorted(self._objects.items()) if (g, p) == kind.key]
            return self._store.open_object_watch(watcher, pairs)

    # ---- the API ---------------------------------------------------------------------------

    def get(self, kind: Kind, ns: str, name: str) -> Result:
        """GET: 200 with the object, or the real 404."""
        found = self.find(kind, ns, name)
        return (200, found) if found is not None else kind.not_found(name)

    def list(self, kind: Kind, ns: str, query: str) -> Result:
        """LIST of one namespace ("" = all, or a cluster-scoped kind) filtered by the query's
        selectors, sorted by namespace and name; items carry no kind/apiVersion."""
        try:
            opts = parse_list_options(query, ns, False, kind.fields)
        except OptionError as err:
            return err.code, err.status
        with self._lock:
            keys = sorted(key for key in self._objects if key[:2] == kind.key)
            try:
                chosen, meta = page(keys, self._objects.__getitem__, lambda key, o: opts.matches(o, key[2]),
                                    opts.raw, self._store.current_rv())
            except OptionError as err:
                return err.code, err.status
            return 200, {"kind": kind.list_kind, "apiVersion": kind.resource.group_version,
                         "metadata": meta, "items": [_list_item(o) for o in chosen]}

    def _check_body(self, kind: Kind, ns: str, body: Any) -> tuple[Optional[dict], Result]:
        """(metadata, None) for a decodable body of this kind, else (None, the 400)."""
        res = kind.resource
        try:
            meta = check_object(res.kind, body)
        except DecodeError as err:
            return None, (400, st.bad_request(str(err)))
        if body.get("kind") not in (None, res.kind) or \
                body.get("apiVersion") not in (None, res.group_version):
            return None, (400, st.bad_request(
                f'the object provided is unrecognized (must be of type {res.kind}): kind '
                f'"{body.get("kind")}", apiVersion "{body.get("apiVersion")}"'))
        if res.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            return None, (400, st.bad_request("the namespace of the provided object does not "
                                              "match the namespace sent on the request"))
        return meta, (0, {})

    def create(self, kind: Kind, ns: str, body: Any) -> Result:
        """POST to the collection: 201 with the stored object (status reset for kinds with a
        status subresource), 409 AlreadyExists, 422 without name or generateName."""
        if kind.resource.namespaced and not ns:
            return 405, st.method_not_allowed()
        meta, refusal = self._check_body(kind, ns, body)
        if meta is None:
            return refusal
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = meta["generateName"] + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
        if not name:
            return kind.invalid("", "metadata.name", "FieldValueRequired",
                                "Required value: name or generateName is required")
        invalid = self._invalid_annotations(kind, name, meta)
        if invalid is not None:
            return invalid
        obj = copy.deepcopy(body)
        obj["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items()
                           if k not in ("resourceVersion", "uid", "creationTimestamp",
                                        "generation")}
        obj.pop("status", None)  # reset on create (claims), or no such field (slices)
        with self._lock:
            if self._key(kind, ns, name) in self._objects:
                return 409, st.already_exists(kind.resource.plural, name, kind.resource.group)
            return 201, self.put(kind, ns, name, obj)

    def update(self, kind: Kind, ns: str, name: str, body: Any, subresource: str) -> Result:
        """PUT of the object or its status, with the generic registry's checks."""
        meta, refusal = self._check_body(kind, ns, body)
        if meta is None:
            return refusal
        if meta.get("name", "") != name:
            return 400, st.bad_request(f"the name of the object ({meta.get('name', '')}) does "
                                       f"not match the name on the URL ({name})")
        rv = meta.get("resourceVersion", "")
        if rv and not _RV_RE.match(rv):
            return 400, st.bad_request(f'invalid resource version: strconv.ParseUint: parsing '
                                       f'"{rv}": invalid syntax')
        plural, group = kind.resource.plural, kind.resource.group
        with self._lock:
            stored = self._objects.get(self._key(kind, ns, name))
            if stored is None:
                return kind.not_found(name)
            smeta = stored.get("metadata")
            if not isinstance(smeta, dict):
                return 500, st.internal_error("stored object has no metadata")
            if meta.get("uid") and meta["uid"] != smeta.get("uid"):
                return 409, st.conflict_uid(plural, name, meta["uid"], str(smeta.get("uid")),
                                            group)
            if rv != smeta.get("resourceVersion") and \
                    (rv or self._store.strict_resource_version):
                return 409, st.conflict_modified(plural, name, group)
            if subresource == "status":
                # ResetObjectMetaForStatus and the spec kept: only the status changes.
                new = copy.deepcopy(stored)
                new["status"] = copy.deepcopy(body.get("status") or {})
            else:
                invalid = self._invalid_annotations(kind, name, meta)
                if invalid is not None:
                    return invalid
                new = self._updated(kind, stored, body)
                if kind.immutable_spec and new.get("spec") != stored.get("spec"):
                    return kind.invalid(name, "spec", "FieldValueInvalid",
                                        'Invalid value: "object": field is immutable')
            new["metadata"]["resourceVersion"] = self._next_rv()
            self._objects[self._key(kind, ns, name)] = new
            record_change(self._store, kind, ns, new, stored)
            return 200, copy.deepcopy(new)

    @staticmethod
    def _updated(kind: Kind, stored: dict, body: dict) -> dict:
        """The main resource's update: the body, with the system fields (and, for kinds with a
        status subresource, the status) kept from the stored object."""
        smeta = _meta(stored)
        new = copy.deepcopy(body)
        new["kind"], new["apiVersion"] = kind.resource.kind, kind.resource.group_version
        meta = new.setdefault("metadata", {})
        for key in ("uid", "creationTimestamp", "namespace", "generation"):
            if key in smeta:
                meta[key] = smeta[key]
            else:
                meta.pop(key, None)
        new.pop("status", None)
        if kind.status:
            new["status"] = copy.deepcopy(stored.get("status", {}))
        if kind.generation and new.get("spec") != stored.get("spec"):
            meta["generation"] = int(smeta.get("generation") or 0) + 1
        return new

    def patch(self, kind: Kind, ns: str, name: str, patch: Any, patch_type: str,
              subresource: str) -> Result:
        """PATCH (merge or strategic merge): applied to the stored object, then checked and
        stored like the PUT, atomically; a resourceVersion in the patch is a precondition."""
        with self._lock:
            stored = self._objects.get(self._key(kind, ns, name))
            if stored is None:
                return kind.not_found(name)
            try:
                patched = apply_patch(patch_type, stored, patch)
            except PatchError as err:
                return 400, st.bad_request(str(err))
            meta = patched.get("metadata")
            if isinstance(meta, dict) and not meta.get("resourceVersion"):
                meta["resourceVersion"] = _meta(stored).get("resourceVersion")
            return self.update(kind, ns, name, patched, subresource)

    def delete(self, kind: Kind, ns: str, name: str) -> Result:
        """DELETE: 200 with the deleted object (at the deletion's resourceVersion), or 404."""
        with self._lock:
            obj = self._objects.pop(self._key(kind, ns, name), None)
            if obj is None:
                return kind.not_found(name)
            if isinstance(obj.get("metadata"), dict):
                obj["metadata"]["resourceVersion"] = self._next_rv()
            record_deletion(self._store, kind, ns, obj)
            return 200, obj

    @staticmethod
    def _invalid_annotations(kind: Kind, name: str, meta: dict) -> Optional[Result]:
        refusal = validate_annotations(kind.resource.kind, name, meta.get("annotations") or {})
        if refusal is None:
            return None
        cause = refusal["details"]["causes"][0]
        return kind.invalid(name, cause["field"], cause["reason"], cause["message"])


def object_routes(table: RouteTable, kind: Kind) -> None:
    """Serves a kind: GET/PUT/PATCH/DELETE of an object, LIST and POST of the collection
    (namespaced kinds also list across namespaces), and the status subresource if it has one."""
    KINDS[kind.key] = kind

    def objects(store: Store) -> ObjectStore:
        return objects_of(store)

    def get(store: Store, call: Call) -> Result:
        return objects(store).get(kind, call.info.namespace, call.info.name)

    def update(store: Store, call: Call) -> Result:
        info = call.info
        return objects(store).update(kind, info.namespace, info.name, call.body,
                                     info.subresource)

    def patch(store: Store, call: Call) -> Result:
        info = call.info
        return objects(store).patch(kind, info.namespace, info.name, call.body,
                                    call.content_type, info.subresource)

    def delete(store: Store, call: Call) -> Result:
        return objects(store).delete(kind, call.info.namespace, call.info.name)

    def list_(store: Store, call: Call) -> Result:
        return objects(store).list(kind, call.info.namespace, call.query)

    def create(store: Store, call: Call) -> Result:
        return objects(store).create(kind, call.info.namespace, call.body)

    res = kind.resource
    table.add(res, {"get": get, "update": update, "patch": patch, "delete": delete}, named=True)
    table.add(res, {"list": list_, "create": create, "watch": watch_handler(kind, objects)}, named=False,
              all_namespaces=res.namespaced)
    if kind.status:
        table.add(res, {"get": get, "update": update, "patch": patch}, named=True,
                  subresource="status")
