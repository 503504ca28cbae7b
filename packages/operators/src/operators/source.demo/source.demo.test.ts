import { describe, expect, it } from "vitest";
import { DEMO_PAYMENT_FIELDS, generateDemoPayment, sourceDemoSpec } from "./source.demo";

const T0 = Date.UTC(2025, 0, 1);

describe("generateDemoPayment", () => {
  it("is a pure function of (seed, index, timestamp)", () => {
    expect(generateDemoPayment(1, 12345, T0)).toEqual(generateDemoPayment(1, 12345, T0));
    expect(generateDemoPayment(1, 12345, T0)).not.toEqual(generateDemoPayment(2, 12345, T0));
    expect(generateDemoPayment(1, 12345, T0 + 5).ts).toBe(T0 + 5);
  });

  it("pins the first payment of seed 1, so generator changes are deliberate", () => {
    expect(generateDemoPayment(1, 0, T0)).toMatchInlineSnapshot(`
      {
        "amount": 141.67,
        "cardCountry": "IN",
        "cardId": "card-000141",
        "channel": "pos",
        "country": "IN",
        "currency": "INR",
        "customerId": "cust-000141",
        "fraudPattern": null,
        "isFraud": false,
        "mcc": "5999",
        "merchantCategory": "retail",
        "merchantId": "m-5999-008",
        "ts": 1735689600000,
        "txId": "tx-1-0",
      }
    `);
  });

  it("gives realistic payments with every declared field", () => {
    const payments = Array.from({ length: 5000 }, (_, i) => generateDemoPayment(7, i, T0 + i * 20, { cardCount: 500, fraudRate: 0.02 }));
    for (const p of payments) {
      expect(Object.keys(p)).toEqual(DEMO_PAYMENT_FIELDS);
      expect(p.amount).toBeGreaterThan(0);
      expect(Math.round(p.amount * 100) / 100).toBe(p.amount);
      expect(p.cardId).toMatch(/^card-\d{6}$/);
    }
    expect(new Set(payments.map((p) => p.txId)).size).toBe(payments.length);
    const cards = new Set(payments.map((p) => p.cardId));
    expect(cards.size).toBeLessThanOrEqual(500);
    expect(cards.size).toBeGreaterThan(100);
    const fraudShare = payments.filter((p) => p.isFraud).length / payments.length;
    expect(fraudShare).toBeGreaterThan(0.005);
    expect(fraudShare).toBeLessThan(0.05);
    expect(payments.filter((p) => !p.isFraud && p.country === p.cardCountry).length / payments.length).toBeGreaterThan(0.85);
  });

  it("makes card-testing bursts: several small payments on one card in a row, then a large one", () => {
    const payments = Array.from({ length: 20000 }, (_, i) => generateDemoPayment(3, i, T0 + i));
    const burst = payments.filter((p) => p.fraudPattern === "card-testing");
    expect(burst.length).toBeGreaterThan(0);
    const first = burst[0];
    const sameCard = burst.filter((p) => p.cardId === first?.cardId && Math.abs(p.ts - (first?.ts ?? 0)) < 50);
    expect(sameCard.length).toBe(8);
    expect(sameCard.slice(0, 7).every((p) => p.amount < 10)).toBe(true);
    expect(sameCard[7]?.amount).toBeGreaterThan(1000);
  });

  it("gives no fraud at fraudRate 0", () => {
    expect(Array.from({ length: 2000 }, (_, i) => generateDemoPayment(1, i, T0, { fraudRate: 0 })).some((p) => p.isFraud)).toBe(false);
  });
});

describe("source.demo spec", () => {
  it("has the documented defaults", () => {
    expect(sourceDemoSpec.params.parse({})).toEqual({ eventsPerSecond: 50, seed: 1, cardCount: 500, fraudRate: 0.02, timestampField: "ts", maxOutOfOrdernessMs: 10_000 });
    expect(sourceDemoSpec.outputFields?.(sourceDemoSpec.params.parse({}), undefined)).toEqual(DEMO_PAYMENT_FIELDS);
  });
});
