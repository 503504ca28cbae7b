// @vitest-environment happy-dom
// The validator's messages as they render: the problems panel and the inspector inside the real
// EditorProvider (store, debounced validation, commands), on a pipeline the shared validator finds
// wrong. Every issue of `validatePipeline` is listed; clicking one selects its node, which the
// inspector then shows; fixing the graph in the inspector's form clears the issue. Autosave talks
// to a stand-in tRPC client (nothing is sent in these tests' time frame that matters to them).
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import type { TRPCClient } from "@trpc/client";
import { catalog, pipelineDocumentSchema, validatePipeline, type PipelineDocument } from "@keyflow/operators";
import { sortIssues } from "../../canvas/issues";
import { toOperatorView } from "../../catalog/operator-view";
import type { AppRouter } from "../../server/root";
import { TRPCProvider } from "../../trpc/react";
import { EditorProvider } from "../canvas/EditorContext";
import { Inspector } from "../inspector/Inspector";
import { ProblemsPanel } from "./ProblemsPanel";

afterEach(cleanup);

const operators = catalog.map((spec) => toOperatorView(spec));

/** A velocity rule with its mistakes: no keyBy before velocity, a threshold of 0, no sink, unconnected outputs. */
const broken: PipelineDocument = pipelineDocumentSchema.parse({
  format: "keyflow.pipeline/v1",
  name: "broken-velocity",
  nodes: [
    { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts" }, position: { x: 0, y: 0 } },
    { id: "vel", type: "velocity", params: { threshold: 0, windowMs: "10m" }, position: { x: 300, y: 0 } },
  ],
  edges: [{ from: "payments", to: "vel" }],
});

function Editor({ doc, children }: { doc: PipelineDocument; children: ReactNode }) {
  const saveDraft = vi.fn(async () => ({}));
  const client = { pipeline: { saveDraft: { mutate: saveDraft } } } as unknown as TRPCClient<AppRouter>;
  return (
    <TRPCProvider trpcClient={client} queryClient={new QueryClient()}>
      <EditorProvider pipeline={{ id: "p1", name: doc.name }} document={doc} operators={operators} mode={{ kind: "draft" }}>
        {children}
      </EditorProvider>
    </TRPCProvider>
  );
}

describe("the problems panel", () => {
  it("lists every message of the shared validator and shows a node's issue in the inspector when clicked", async () => {
    // In the panel's order (errors first), as the editor sorts them.
    const issues = sortIssues(validatePipeline(broken).issues);
    expect(issues.length).toBeGreaterThanOrEqual(3);
    expect(issues.map((i) => i.code)).toEqual(expect.arrayContaining(["bad-param"]));
    render(
      <Editor doc={broken}>
        <ProblemsPanel />
        <Inspector />
      </Editor>,
    );
    const errors = issues.filter((i) => i.severity === "error").length;
    expect(screen.getByTestId("problems-summary").textContent).toContain(`${errors} error`);
    expect(screen.getByTestId("inspector").textContent).toContain(`${errors} error`);

    fireEvent.click(screen.getByTestId("problems-summary"));
    const list = screen.getByTestId("problems-list");
    const rows = within(list).getAllByRole("listitem");
    expect(rows).toHaveLength(issues.length);
    issues.forEach((issue, i) => {
      expect(within(screen.getByTestId(`problem-${i}`)).getByText(issue.message)).toBeTruthy();
      expect(screen.getByTestId(`problem-${i}`).textContent).toContain(issue.code);
    });

    // The threshold's issue: a button that selects "vel"; the inspector opens on it, the message under the field.
    const thresholdIssue = issues.find((i) => i.nodeId === "vel" && i.param === "threshold");
    expect(thresholdIssue).toBeDefined();
    const index = rows.findIndex((row) => row.textContent?.includes(thresholdIssue?.message ?? "?"));
    const button = screen.getByTestId(`problem-${index}`);
    expect(button.tagName).toBe("BUTTON");
    expect(button.getAttribute("data-severity")).toBe("error");
    expect(button.textContent).toContain("vel");
    fireEvent.click(button);
    expect(screen.getByTestId("inspector-node-id").textContent).toBe("vel");
    expect(screen.getByTestId("param-error-threshold").textContent).toBe(thresholdIssue?.message.replace(/^node "vel": param "threshold":? /, ""));

    // Graph-level issues about "vel" (no keyBy before it) are listed at the top of the inspector.
    const nodeLevel = issues.filter((i) => i.nodeId === "vel" && i.param === undefined);
    expect(nodeLevel.length).toBeGreaterThan(0);
    const inspectorIssues = screen.getByTestId("inspector-issues").textContent ?? "";
    for (const issue of nodeLevel) expect(inspectorIssues).toContain(issue.message.replace(/^node "vel": /, ""));

    // A pipeline-level issue (no sink) is listed, but names no node to go to: not a button.
    const pipelineIssue = issues.findIndex((i) => i.nodeId === undefined && i.edge === undefined);
    expect(issues[pipelineIssue]?.code).toBe("no-sink");
    expect(screen.getByTestId(`problem-${pipelineIssue}`).tagName).toBe("DIV");

    // Warnings (an unconnected output and late port on "vel") are buttons too, marked as warnings.
    const warning = issues.findIndex((i) => i.severity === "warning");
    expect(screen.getByTestId(`problem-${warning}`).getAttribute("data-severity")).toBe("warning");
    fireEvent.click(screen.getByTestId(`problem-${warning}`));
    expect(screen.getByTestId("inspector-node-id").textContent).toBe(issues[warning]?.nodeId);
  });

  it("clears a param's issue from the panel once it is fixed in the inspector", async () => {
    render(
      <Editor doc={broken}>
        <ProblemsPanel />
        <Inspector />
      </Editor>,
    );
    fireEvent.click(screen.getByTestId("problems-summary"));
    const message = validatePipeline(broken).issues.find((i) => i.nodeId === "vel" && i.param === "threshold")?.message ?? "?";
    const index = within(screen.getByTestId("problems-list"))
      .getAllByRole("listitem")
      .findIndex((row) => row.textContent?.includes(message));
    fireEvent.click(screen.getByTestId(`problem-${index}`));
    const threshold = screen.getByTestId("param-threshold") as HTMLInputElement;
    expect(threshold.value).toBe("0");
    await act(async () => {
      fireEvent.change(threshold, { target: { value: "3" } });
    });
    // At once in the field; in the panel after the validator's debounce.
    expect(screen.queryByTestId("param-error-threshold")).toBeNull();
    await waitFor(() => expect(within(screen.getByTestId("problems-list")).queryByText(message)).toBeNull());
    // A duration that does not parse: the field says so at once, the panel gets the validator's message.
    await act(async () => {
      fireEvent.change(screen.getByTestId("param-windowMs"), { target: { value: "10 parsecs" } });
    });
    expect(screen.getByTestId("param-error-windowMs").textContent).toMatch(/^"10 parsecs" is not a duration/);
    await waitFor(() => expect(screen.getByTestId("problems-list").textContent).toContain('param "windowMs"'));
  });
});
