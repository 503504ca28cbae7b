// Unit tests' setup: property tests generate inputs of up to about a hundred elements.
// fast-check's default size ("small") caps an array without a minLength at ten elements whatever
// its maxLength says, so a property over "any sequence of records" saw at most ten records: too
// few for a window to fire twice, a TTL to expire or a snapshot to fall between two firings.
import fc from "fast-check";

fc.configureGlobal({ baseSize: "medium" });
