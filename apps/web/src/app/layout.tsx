import type { Metadata } from "next";
import type { ReactNode } from "react";
import { TRPCReactProvider } from "../trpc/react";
import "@xyflow/react/dist/style.css";
import "./globals.css";

export const metadata: Metadata = {
  title: "Keyflow",
  description: "Design, run and operate stateful fraud-detection stream pipelines.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <TRPCReactProvider>{children}</TRPCReactProvider>
      </body>
    </html>
  );
}
