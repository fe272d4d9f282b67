/**
 * A value from untyped input (a request body, a stored config) as text: strings as they are,
 * objects and arrays as JSON (never "[object Object]"), other values as String() writes them.
 */
export function toText(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value;
    case "object":
      return value === null ? "null" : JSON.stringify(value);
    case "function":
      return Function.prototype.toString.call(value);
    case "symbol":
      return value.toString();
    case "number":
    case "boolean":
    case "bigint":
    case "undefined":
      return String(value);
  }
}
