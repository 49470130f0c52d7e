// Platform adapters are data (adapters/*.json): origin, API endpoints, how
// to find the input box and the last reply. A fourth platform is a file.
export const PLATFORMS = ["platform_a", "platform_b", "platform_c"];

export function validateAdapter(a) {
  const errors = [];
  if (!PLATFORMS.includes(a.platform)) errors.push("platform must be one of " + PLATFORMS.join(", "));
  try {
    const u = new URL(a.origin);
    if (u.pathname !== "/" || u.search) errors.push("origin must be scheme://host[:port]");
  } catch {
    errors.push("origin must be a URL");
  }
  for (const k of ["inputSelector", "sendSelector", "replySelector"]) {
    if (typeof a[k] !== "string" || a[k] === "") errors.push(k + " is required");
  }
  // The user's messages (reported by id) default to .message.user.
  if ("userSelector" in a && (typeof a.userSelector !== "string" || a.userSelector === "")) errors.push("userSelector must be a selector when set");
  if (!Array.isArray(a.endpoints)) errors.push("endpoints must be an array");
  return errors;
}

// adapterFor finds the adapter whose origin serves url.
export function adapterFor(adapters, url) {
  let origin;
  try {
    origin = new URL(url).origin;
  } catch {
    return undefined;
  }
  return adapters.find((a) => new URL(a.origin).origin === origin);
}
