export * from "./api";
export * from "./auth";
export * from "./artifacts";
export * from "./browser";
export * from "./web-app";
export * from "./runner";
export * from "./kafka";
