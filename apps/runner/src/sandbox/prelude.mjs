// @ts-nocheck
// The sandbox's runtime INSIDE the isolate: `keyflowPrelude` is never called in Node; the child
// compiles its source text (Function.prototype.toString of this plain, untranspiled .mjs file)
// into each fresh isolate before the user's code, so it must not refer to anything outside
// itself. It is the first code of the realm: it takes the clock, randomness and nondeterministic
// builtins away, then returns one `dispatch(op, …)` function to the child (kept by reference, on
// no global). Calls cross as JSON text in and JSON text out: no object of either side is ever
// shared. User code runs in the same realm afterwards and may tamper with anything here; that
// only changes the effects it reports, which the host validates like any other untrusted input.
export function keyflowPrelude() {
  "use strict";
  const G = globalThis;
  const { stringify, parse } = JSON;
  const { keys: objectKeys, getPrototypeOf, defineProperty, freeze, hasOwn } = Object;
  const ObjectProto = Object.prototype;
  const isArray = Array.isArray;
  const isFiniteNumber = Number.isFinite;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const construct = Reflect.construct;
  const arrayValues = Array.prototype.values;
  const MAX_LOG_LINES = 100;
  const MAX_LOG_CHARS = 2000;
  const TAG_MAX = 200;

  // ---- Determinism: no clock, no randomness, no GC-dependent callbacks, no shared memory. ----
  for (const name of ["SharedArrayBuffer", "Atomics", "WebAssembly", "FinalizationRegistry", "WeakRef"]) delete G[name];

  const noClock = (what) =>
    new ErrorCtor(
      `${what} is not available in process.custom: the code has no clock, so that a replay gives the same output. ` +
        "Use ctx.timestamp (event time), ctx.watermark() or ctx.processingTime()",
    );
  const RealDate = Date;
  function SandboxDate(...args) {
    if (new.target === undefined) throw noClock("Date()");
    if (args.length === 0) throw noClock("new Date()");
    return construct(RealDate, args, new.target);
  }
  SandboxDate.prototype = RealDate.prototype;
  defineProperty(RealDate.prototype, "constructor", { value: SandboxDate, writable: true, configurable: true, enumerable: false });
  defineProperty(SandboxDate, "name", { value: "Date" });
  SandboxDate.UTC = RealDate.UTC;
  SandboxDate.parse = RealDate.parse;
  SandboxDate.now = function now() {
    throw noClock("Date.now()");
  };
  defineProperty(G, "Date", { value: SandboxDate, writable: true, configurable: true, enumerable: false });

  Math.random = function random() {
    throw new ErrorCtor(
      "Math.random() is not available in process.custom: a replay must give the same output. Derive what you need from the record or the key",
    );
  };

  if (typeof Intl === "object" && Intl !== null && typeof Intl.DateTimeFormat === "function") {
    const proto = Intl.DateTimeFormat.prototype;
    const formatGetter = Object.getOwnPropertyDescriptor(proto, "format")?.get;
    if (formatGetter) {
      defineProperty(proto, "format", {
        configurable: true,
        get() {
          const f = formatGetter.call(this);
          return function format(date) {
            if (date === undefined) throw noClock("Intl.DateTimeFormat#format() without a date");
            return f(date);
          };
        },
      });
    }
    for (const m of ["formatToParts"]) {
      const orig = proto[m];
      if (typeof orig === "function") {
        defineProperty(proto, m, {
          configurable: true,
          writable: true,
          value: function (date) {
            if (date === undefined) throw noClock(`Intl.DateTimeFormat#${m}() without a date`);
            return orig.call(this, date);
          },
        });
      }
    }
  }

  // ---- console: captured into the current call's effects. ----
  let logSink = null;
  const show = (v) => {
    if (typeof v === "string") return v;
    try {
      const s = stringify(v);
      return s === undefined ? StringCtor(v) : s;
    } catch {
      try {
        return StringCtor(v);
      } catch {
        return "[unprintable]";
      }
    }
  };
  const logger = (level) =>
    function (...args) {
      if (logSink === null || logSink.length >= MAX_LOG_LINES) return;
      let line = (level === "log" || level === "info" ? "" : `${level}: `) + args.map(show).join(" ");
      if (line.length > MAX_LOG_CHARS) line = line.slice(0, MAX_LOG_CHARS) + "…";
      logSink.push(line);
    };
  defineProperty(G, "console", {
    value: freeze({ log: logger("log"), info: logger("info"), warn: logger("warn"), error: logger("error"), debug: logger("debug") }),
    writable: true,
    configurable: true,
    enumerable: false,
  });

  // ---- JSON values: checked and copied at the boundary of state and output. ----
  const toJson = (v, what, depth) => {
    if (depth > 64) throw new TypeErrorCtor(`${what} is nested more than 64 levels deep (a cycle?)`);
    if (v === null) return null;
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        if (!isFiniteNumber(v)) throw new TypeErrorCtor(`${what} is ${v}: JSON has no NaN or Infinity`);
        return v;
      case "object": {
        if (isArray(v)) {
          const out = [];
          const n = v.length;
          for (let i = 0; i < n; i++) out[i] = toJson(v[i], `${what}[${i}]`, depth + 1);
          return out;
        }
        const proto = getPrototypeOf(v);
        if (proto !== ObjectProto && proto !== null) {
          throw new TypeErrorCtor(`${what} is not a plain object (state and output are JSON; convert dates, maps and class instances first)`);
        }
        const out = {};
        for (const k of objectKeys(v)) {
          const x = v[k];
          if (x === undefined) continue; // as JSON.stringify does
          const copy = toJson(x, `${what}.${k}`, depth + 1);
          if (k === "__proto__") defineProperty(out, k, { value: copy, writable: true, enumerable: true, configurable: true });
          else out[k] = copy;
        }
        return out;
      }
      default:
        throw new TypeErrorCtor(`${what} is ${v === undefined ? "undefined" : `a ${typeof v}`}: state and output are JSON`);
    }
  };
  const copyOut = (v) => (v === undefined ? undefined : toJson(v, "value", 0));
  const decodeNumber = (v) => (v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : v);

  // ---- The user's module. ----
  let handler = null;
  let processElement = null;
  let onTimer = null;
  let sidePorts = null;

  const init = (sidePortsJson, moduleFn) => {
    sidePorts = parse(sidePortsJson);
    const module = { exports: {} };
    const require = function require(specifier) {
      throw new ErrorCtor(
        `require(${stringify(StringCtor(specifier))}): modules are not available in process.custom (no imports, files, network or environment)`,
      );
    };
    logSink = [];
    try {
      moduleFn.call(module.exports, module.exports, require, module);
    } finally {
      logSink = null;
    }
    const ex = module.exports;
    let h = ex;
    if ((typeof ex !== "object" && typeof ex !== "function") || ex === null) throw new TypeErrorCtor("the code must export processElement(record, ctx)");
    if (typeof ex.processElement !== "function" && ex.default !== undefined && ex.default !== null) {
      h = typeof ex.default === "function" ? { processElement: ex.default } : ex.default;
    }
    if (typeof h.processElement !== "function") throw new TypeErrorCtor("the code must export processElement(record, ctx)");
    if (h.onTimer !== undefined && typeof h.onTimer !== "function") throw new TypeErrorCtor("onTimer, when exported, must be a function");
    handler = h;
    processElement = h.processElement;
    onTimer = h.onTimer ?? null;
    return { ok: true, hasOnTimer: onTimer !== null };
  };

  // ---- One call: a context over copied data, closed when the call returns. ----
  const call = (op, input) => {
    let open = true;
    const fnName = op === "element" ? "processElement" : "onTimer";
    const check = () => {
      if (!open) throw new ErrorCtor(`ctx is only valid during the ${fnName} call it was given to`);
    };
    const effects = { outputs: [], sideOutputs: [], state: [], touched: [], timers: [], logs: [] };
    const snapshot = input.state !== null && typeof input.state === "object" ? input.state : {};
    const cells = new Map();
    const order = [];
    const watermark = decodeNumber(input.watermark);
    const timestamp = op === "element" ? input.timestamp : input.time;

    const ttlOf = (name, opts) => {
      if (opts === undefined || opts === null) return undefined;
      if (typeof opts !== "object") throw new TypeErrorCtor(`state "${name}": options must be an object like { ttlMs: 3600000 }`);
      const ttl = opts.ttlMs;
      if (ttl === undefined) return undefined;
      if (typeof ttl !== "number" || !isFiniteNumber(ttl) || ttl <= 0) throw new TypeErrorCtor(`state "${name}": ttlMs must be a positive number of milliseconds`);
      return ttl;
    };
    const cellOf = (name, kind, opts) => {
      check();
      if (typeof name !== "string" || name === "") throw new TypeErrorCtor("a state name must be a non-empty string");
      const ttlMs = ttlOf(name, opts);
      let c = cells.get(name);
      if (c === undefined) {
        const snap = hasOwn(snapshot, name) ? snapshot[name] : undefined;
        if (snap !== undefined && snap !== null && snap.kind !== kind) {
          throw new TypeErrorCtor(`state "${name}" is a ${snap.kind} state, not a ${kind} state (a name keeps its kind)`);
        }
        c = { kind, ttlMs, dirty: false, value: undefined, values: [], entries: new Map() };
        if (snap) {
          if (kind === "value") c.value = snap.value ?? undefined;
          else if (kind === "list") c.values = isArray(snap.values) ? snap.values : [];
          else if (snap.entries && typeof snap.entries === "object") for (const k of objectKeys(snap.entries)) c.entries.set(k, snap.entries[k]);
        }
        cells.set(name, c);
        order.push(name);
      } else {
        if (c.kind !== kind) throw new TypeErrorCtor(`state "${name}" is a ${c.kind} state, not a ${kind} state (a name keeps its kind)`);
        if (ttlMs !== undefined) c.ttlMs = ttlMs;
      }
      return c;
    };
    const what = (name) => `state "${name}"`;
    const state = freeze({
      value(name, opts) {
        const c = cellOf(name, "value", opts);
        return freeze({
          value() {
            check();
            return copyOut(c.value);
          },
          update(v) {
            check();
            if (v === undefined) throw new TypeErrorCtor(`${what(name)}.update(undefined): use clear()`);
            c.value = toJson(v, what(name), 0);
            c.dirty = true;
          },
          clear() {
            check();
            c.value = undefined;
            c.dirty = true;
          },
        });
      },
      list(name, opts) {
        const c = cellOf(name, "list", opts);
        return freeze({
          get() {
            check();
            return toJson(c.values, what(name), 0);
          },
          add(v) {
            check();
            c.values.push(toJson(v, `${what(name)} element`, 0));
            c.dirty = true;
          },
          update(vs) {
            check();
            if (!isArray(vs)) throw new TypeErrorCtor(`${what(name)}.update() takes an array`);
            c.values = toJson(vs, what(name), 0);
            c.dirty = true;
          },
          clear() {
            check();
            c.values = [];
            c.dirty = true;
          },
        });
      },
      map(name, opts) {
        const c = cellOf(name, "map", opts);
        const mapKey = (k) => {
          if (typeof k !== "string") throw new TypeErrorCtor(`${what(name)}: map keys are strings`);
          return k;
        };
        return freeze({
          get(k) {
            check();
            return copyOut(c.entries.get(mapKey(k)));
          },
          put(k, v) {
            check();
            if (v === undefined) throw new TypeErrorCtor(`${what(name)}.put(${stringify(k)}, undefined): use remove()`);
            c.entries.set(mapKey(k), toJson(v, `${what(name)}[${stringify(k)}]`, 0));
            c.dirty = true;
          },
          remove(k) {
            check();
            c.entries.delete(mapKey(k));
            c.dirty = true;
          },
          contains(k) {
            check();
            return c.entries.has(mapKey(k));
          },
          entries() {
            check();
            const list = [];
            for (const [k, v] of c.entries) list.push([k, copyOut(v)]);
            return arrayValues.call(list);
          },
          keys() {
            check();
            return arrayValues.call([...c.entries.keys()]);
          },
          isEmpty() {
            check();
            return c.entries.size === 0;
          },
          clear() {
            check();
            c.entries.clear();
            c.dirty = true;
          },
        });
      },
    });

    const time = (t, where) => {
      if (typeof t !== "number" || !isFiniteNumber(t)) throw new TypeErrorCtor(`${where}: the time must be a finite number of ms since the epoch`);
      return t;
    };
    const tagOf = (tag, where) => {
      if (tag === undefined) return "";
      if (typeof tag !== "string" || tag.length > TAG_MAX) throw new TypeErrorCtor(`${where}: the tag must be a string of at most ${TAG_MAX} characters`);
      return tag;
    };
    const timer = (opName, domain, where) =>
      function (t, tag) {
        check();
        effects.timers.push({ op: opName, domain, time: time(t, where), tag: tagOf(tag, where) });
      };
    const timers = freeze({
      registerEventTime: timer("register", "event", "ctx.timers.registerEventTime"),
      deleteEventTime: timer("delete", "event", "ctx.timers.deleteEventTime"),
      registerProcessingTime: timer("register", "processing", "ctx.timers.registerProcessingTime"),
      deleteProcessingTime: timer("delete", "processing", "ctx.timers.deleteProcessingTime"),
    });

    const emitted = (value, ts, where) => {
      if (value === null || typeof value !== "object" || isArray(value)) throw new TypeErrorCtor(`${where}: the value must be a JSON object`);
      const v = toJson(value, `${where} value`, 0);
      const t = ts === undefined ? timestamp : time(ts, where);
      return { value: v, timestamp: t };
    };
    const ctx = freeze({
      key: input.key === null ? undefined : input.key,
      timestamp,
      inputPort: op === "element" ? (input.inputPort ?? "in") : "",
      watermark() {
        check();
        return watermark;
      },
      processingTime() {
        check();
        if (typeof input.processingTime !== "number") throw new ErrorCtor("ctx.processingTime(): the engine gave no processing time for this call");
        return input.processingTime;
      },
      state,
      timers,
      output(value, ts) {
        check();
        effects.outputs.push(emitted(value, ts, "ctx.output"));
      },
      sideOutput(port, value, ts) {
        check();
        if (typeof port !== "string") throw new TypeErrorCtor("ctx.sideOutput: the port must be a string");
        if (sidePorts !== null && !sidePorts.includes(port)) {
          throw new TypeErrorCtor(`ctx.sideOutput: no side output "${port}"; use ${sidePorts.map((p) => `"${p}"`).join(" or ")}`);
        }
        const e = emitted(value, ts, `ctx.sideOutput("${port}")`);
        effects.sideOutputs.push({ port, value: e.value, timestamp: e.timestamp });
      },
    });

    const finish = () => {
      open = false;
      for (const name of order) {
        const c = cells.get(name);
        effects.touched.push(c.ttlMs === undefined ? { name, kind: c.kind } : { name, kind: c.kind, ttlMs: c.ttlMs });
        if (!c.dirty) continue;
        let cell = null;
        if (c.kind === "value") cell = c.value === undefined ? null : { kind: "value", value: c.value };
        else if (c.kind === "list") cell = c.values.length === 0 ? null : { kind: "list", values: c.values };
        else if (c.entries.size > 0) {
          const entries = {};
          for (const [k, v] of c.entries) defineProperty(entries, k, { value: v, writable: true, enumerable: true, configurable: true });
          cell = { kind: "map", entries };
        }
        effects.state.push(c.ttlMs === undefined ? { name, cell } : { name, cell, ttlMs: c.ttlMs });
      }
    };

    logSink = effects.logs;
    try {
      let result;
      if (op === "element") {
        const record = { value: input.record, timestamp, key: ctx.key };
        result = processElement.call(handler, record, ctx);
      } else if (onTimer !== null) {
        result = onTimer.call(handler, freeze({ time: input.time, domain: input.domain, tag: input.tag ?? "" }), ctx);
      }
      if ((typeof result === "object" || typeof result === "function") && result !== null && typeof result.then === "function") {
        throw new TypeErrorCtor(`${fnName} must be synchronous: it returned a Promise (state, timers and output are synchronous; do not use async)`);
      }
    } catch (e) {
      finish();
      return { ok: false, error: describe(e), partial: effects };
    } finally {
      logSink = null;
    }
    finish();
    return { ok: true, effects };
  };

  const describe = (e) => {
    try {
      if ((typeof e === "object" || typeof e === "function") && e !== null) {
        const name = e.name;
        const message = e.message;
        const stack = e.stack;
        return {
          name: typeof name === "string" ? name.slice(0, 200) : "Error",
          message: typeof message === "string" ? message.slice(0, 2000) : StringCtor(e).slice(0, 2000),
          stack: typeof stack === "string" ? stack.slice(0, 8000) : undefined,
        };
      }
      return { name: "Error", message: `the code threw ${typeof e === "string" ? stringify(e.slice(0, 2000)) : StringCtor(e)}` };
    } catch {
      return { name: "Error", message: "the code threw a value that cannot be described" };
    }
  };

  const FAILED = '{"ok":false,"error":{"name":"Error","message":"the sandbox could not serialize the result of the call"}}';
  return function dispatch(op, a, b) {
    let result;
    try {
      if (op === "init") result = init(a, b);
      else result = call(op, parse(a));
    } catch (e) {
      result = { ok: false, error: describe(e) };
    }
    try {
      const text = stringify(result);
      return typeof text === "string" ? text : FAILED;
    } catch {
      return FAILED;
    }
  };
}
