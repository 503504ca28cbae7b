// POST JSON to one of our own routes with the CSRF header every state-changing request needs.
export async function postJson(url: string, body: unknown): Promise<{ ok: boolean; status: number; data: unknown }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-keyflow-csrf": "1" }, body: JSON.stringify(body), credentials: "same-origin" });
  const data: unknown = await res.json().catch(() => null);
  return { ok: res.ok, status: res.status, data };
}

export function errorMessage(data: unknown, fallback: string): string {
  if (typeof data === "object" && data !== null && "error" in data) {
    const error = (data as { error: unknown }).error;
    if (typeof error === "object" && error !== null && "message" in error && typeof (error as { message: unknown }).message === "string") return (error as { message: string }).message;
  }
  return fallback;
}
