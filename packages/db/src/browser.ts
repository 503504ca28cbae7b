// Browser-safe part of @keyflow/db: enums and model types only, no client, no driver.
// Import this from client components ("use client"), never "@keyflow/db" itself.
export * from "./generated/prisma/browser";
