// @vitest-environment happy-dom
// The inspector inside the real EditorProvider: the selected node's form generated from its
// catalog spec, edits going to the editor's document (undoable), required params named as such,
// a dailyTotal's time zone chosen from a select. The Monaco editors are not provided
// (ParamEditorsContext is empty), so expressions and code use the plain textarea.
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import type { TRPCClient } from "@trpc/client";
import { catalog, pipelineDocumentSchema, type PipelineDocument } from "@keyflow/operators";
import { toOperatorView } from "../../catalog/operator-view";
import type { AppRouter } from "../../server/root";
import { TRPCProvider } from "../../trpc/react";
import { EditorProvider, useEditor } from "../canvas/EditorContext";
import { Inspector } from "./Inspector";

afterEach(cleanup);

const operators = catalog.map((spec) => toOperatorView(spec));

const doc: PipelineDocument = pipelineDocumentSchema.parse({
  format: "keyflow.pipeline/v1",
  name: "inspected",
  nodes: [
    { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts" }, position: { x: 0, y: 0 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 200, y: 0 } },
    { id: "vel", type: "velocity", params: {}, position: { x: 400, y: 0 } },
    { id: "daily", type: "dailyTotal", params: {}, position: { x: 400, y: 200 } },
    { id: "mine", type: "process.custom", params: { code: "export function processElement() {}" }, position: { x: 400, y: 400 } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
  ],
});

/** Exposes the editor (store, commands) to the test. */
let editor: ReturnType<typeof useEditor> | undefined;
function Probe() {
  editor = useEditor();
  return null;
}

function renderInspector(children: ReactNode = <Inspector />) {
  const client = { pipeline: { saveDraft: { mutate: vi.fn(async () => ({})) } } } as unknown as TRPCClient<AppRouter>;
  return render(
    <TRPCProvider trpcClient={client} queryClient={new QueryClient()}>
      <EditorProvider pipeline={{ id: "p1", name: doc.name }} document={doc} operators={operators} mode={{ kind: "draft" }}>
        <Probe />
        {children}
      </EditorProvider>
    </TRPCProvider>,
  );
}

const select = (nodeId: string) => act(() => editor?.store.select({ nodes: [nodeId], edges: [] }));
const paramsOf = (nodeId: string) => editor?.store.getState().doc.nodes.find((n) => n.id === nodeId)?.params;
const errorsOf = (key: string) => screen.queryAllByTestId(`param-error-${key}`).map((e) => e.textContent);

describe("the inspector", () => {
  it("without a selection, summarises the pipeline", () => {
    renderInspector();
    expect(screen.getByTestId("inspector").textContent).toContain("inspected");
    expect(screen.getByTestId("inspector").textContent).toContain("Select a node to edit its params");
  });

  it("shows velocity's generated form: required params named, typed values stored in the document", () => {
    renderInspector();
    select("vel");
    expect(screen.getByTestId("inspector-node-id").textContent).toBe("vel");
    expect(screen.getByTestId("inspector-form")).toBeTruthy();
    // Empty required params: "is required", not the schema's message about a wrong value.
    expect(errorsOf("threshold")).toEqual(["is required"]);
    expect(errorsOf("windowMs")).toEqual(["is required"]);

    fireEvent.change(screen.getByTestId("param-threshold"), { target: { value: "3" } });
    fireEvent.change(screen.getByTestId("param-windowMs"), { target: { value: "10m" } });
    expect(paramsOf("vel")).toEqual({ threshold: 3, windowMs: "10m" });
    expect(screen.getByTestId("param-windowMs-hint").textContent).toBe("10m = 600,000 ms");
    expect(errorsOf("threshold")).toEqual([]);
    expect(errorsOf("windowMs")).toEqual([]);

    fireEvent.change(screen.getByTestId("param-windowMs"), { target: { value: "10 parsecs" } });
    expect(paramsOf("vel")).toEqual({ threshold: 3, windowMs: "10 parsecs" });
    expect(errorsOf("windowMs")).toEqual([expect.stringMatching(/^"10 parsecs" is not a duration — write it like /)]);

    fireEvent.change(screen.getByTestId("param-mode"), { target: { value: "eager" } });
    expect(paramsOf("vel")).toMatchObject({ mode: "eager" });

    // Edits are undoable: one step per field.
    act(() => editor?.commands.undo());
    expect(paramsOf("vel")).toEqual({ threshold: 3, windowMs: "10 parsecs" });
  });

  it("gives dailyTotal's time zone a select of IANA zones", () => {
    renderInspector();
    select("daily");
    const zone = screen.getByTestId("param-timeZone") as HTMLSelectElement;
    expect(zone.tagName).toBe("SELECT");
    expect(errorsOf("timeZone")).toEqual(["is required"]);
    fireEvent.change(zone, { target: { value: "America/New_York" } });
    expect(paramsOf("daily")).toMatchObject({ timeZone: "America/New_York" });
    expect(errorsOf("timeZone")).toEqual([]);
  });

  it("edits process.custom's code in a plain textarea when no Monaco editor is provided", () => {
    renderInspector();
    select("mine");
    const code = screen.getByTestId("param-code");
    expect(code.tagName).toBe("TEXTAREA");
    fireEvent.change(code, { target: { value: "export function processElement(r, ctx) { ctx.output(r.value); }" } });
    expect(paramsOf("mine")).toEqual({ code: "export function processElement(r, ctx) { ctx.output(r.value); }" });
  });

  it("edits the node's label", () => {
    renderInspector();
    select("vel");
    fireEvent.change(screen.getByTestId("node-label"), { target: { value: "3 in 10 minutes" } });
    expect(editor?.store.getState().doc.nodes.find((n) => n.id === "vel")?.label).toBe("3 in 10 minutes");
    expect(screen.getByRole("heading", { level: 3 }).textContent).toBe("3 in 10 minutes");
  });
});
