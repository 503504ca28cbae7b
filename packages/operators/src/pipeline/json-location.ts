// Where a JSON text is broken, as line and column. JSON.parse in Node 20 often reports no position
// ("Unexpected token '}', ... is not valid JSON"), so on failure a small scanner walks the text to
// the first error; analysts get "line 3, column 17: expected a value, found '}'".
export interface TextLocation {
  line: number;
  column: number;
}

export function locationAt(text: string, position: number): TextLocation {
  const upTo = text.slice(0, Math.max(0, Math.min(position, text.length)));
  const lines = upTo.split("\n");
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}

export type JsonParseResult = { ok: true; value: unknown } | { ok: false; message: string; location: TextLocation };

export function parseJsonWithLocation(text: string): JsonParseResult {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    const found = findJsonError(text);
    if (found) return { ok: false, message: found.message, location: locationAt(text, found.position) };
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, message, location: locationAt(text, text.length) };
  }
}

class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** The first syntax error of `text` (RFC 8259), or undefined when it is valid JSON. */
export function findJsonError(text: string): { message: string; position: number } | undefined {
  let i = 0;
  const describe = (at: number) => (at >= text.length ? "the end of the file" : `'${text[at]}'`);
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const fail = (expected: string): never => {
    throw new JsonSyntaxError(`expected ${expected}, found ${describe(i)}`, i);
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail("a value");
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
            i += 2;
            fail("four hex digits after \\u");
          }
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else {
          i++;
          fail("an escape such as \\n or \\\"");
        }
      } else if (c < 0x20) fail("the closing '\"' of the string (control characters must be escaped)");
      else i++;
    }
    fail("the closing '\"' of the string");
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === "" || m[0] === "-") fail("a value");
    i += m?.[0].length ?? 0;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("a property name in double quotes");
        string();
        ws();
        if (text[i] !== ":") fail("':' after the property name");
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return;
        }
        fail("',' or '}'");
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return;
        }
        fail("',' or ']'");
      }
    } else if (c === '"') string();
    else if (c === "t") literal("true");
    else if (c === "f") literal("false");
    else if (c === "n") literal("null");
    else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) number();
    else fail("a value");
  };
  try {
    if (text.charCodeAt(0) === 0xfeff) i = 1;
    value();
    ws();
    if (i < text.length) fail("the end of the document");
    return undefined;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { message: err.message, position: err.position };
    throw err;
  }
}
