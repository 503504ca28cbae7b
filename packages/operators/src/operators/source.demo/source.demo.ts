// source.demo: a built-in generator of realistic card payments, so `npm start` shows a running
// pipeline with no broker. The runner drives its timing (eventsPerSecond); this module holds the
// spec and a PURE generator: event `index` of seed `seed` is always the same record, computed
// from (seed, index) alone, so tests, replays and restores are reproducible without state.
import { z } from "zod";
import type { JsonObject } from "../../core/api";
import { defineOperator } from "../../core/spec";
import { maxOutOfOrdernessParam, sourceOutputs } from "../event-time";

export const sourceDemoParams = z.strictObject({
  eventsPerSecond: z
    .number()
    .positive({ error: "must be a positive rate, e.g. 50" })
    .max(100_000)
    .default(50)
    .describe("Payments generated per second of processing time (the runner paces them)"),
  seed: z.number().int().default(1).describe("Seed of the generator: the same seed gives the same payments, in the same order"),
  cardCount: z.number().int().min(1).max(10_000_000).default(500).describe("Number of distinct cards (the key space of a keyBy cardId)"),
  fraudRate: z
    .number()
    .min(0)
    .max(1)
    .default(0.02)
    .describe("Approximate fraction of fraudulent payments (0–1): card-testing bursts and large foreign payments, marked isFraud"),
  timestampField: z
    .literal("ts")
    .default("ts")
    .describe("Field holding the event time (fixed: demo payments carry it in `ts`, epoch ms); present so every source names its timestamp field the same way"),
  maxOutOfOrdernessMs: maxOutOfOrdernessParam(),
});
export type SourceDemoParams = z.infer<typeof sourceDemoParams>;

/** The field that carries event time in demo payments. */
export const DEMO_TIMESTAMP_FIELD = "ts";

export interface DemoPayment extends JsonObject {
  txId: string;
  cardId: string;
  customerId: string;
  merchantId: string;
  /** ISO 18245 merchant category code. */
  mcc: string;
  merchantCategory: string;
  /** In major units of `currency`, two decimals. */
  amount: number;
  currency: string;
  /** ISO 3166 alpha-2 country where the payment happened. */
  country: string;
  /** The card's home country; a payment abroad has country != cardCountry. */
  cardCountry: string;
  channel: string;
  /** Event time, epoch ms. */
  ts: number;
  isFraud: boolean;
  /** "card-testing" | "large-foreign" for fraud, null for legitimate payments. */
  fraudPattern: string | null;
}

export const DEMO_PAYMENT_FIELDS: readonly (keyof DemoPayment & string)[] = [
  "txId",
  "cardId",
  "customerId",
  "merchantId",
  "mcc",
  "merchantCategory",
  "amount",
  "currency",
  "country",
  "cardCountry",
  "channel",
  "ts",
  "isFraud",
  "fraudPattern",
];

// ---- Seeded randomness ----------------------------------------------------------------------

/** A 32-bit mix (the murmur3 finalizer): spreads (seed, index, stream) into independent streams. */
function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Mulberry32: a small, fast, seeded PRNG; good enough for synthetic data, never for secrets. */
function mulberry32(state: number): () => number {
  let a = state >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A PRNG for one purpose (`stream`) of one event: no state shared between events. */
function rngFor(seed: number, index: number, stream: number): () => number {
  // index may exceed 2^32 in a long-running demo; fold its high bits in.
  const hi = Math.floor(index / 4294967296);
  return mulberry32(mix32(mix32(mix32(seed | 0) ^ (index >>> 0)) ^ mix32(hi + 0x9e3779b9) ^ Math.imul(stream, 0x27d4eb2d)));
}

const pick = <T>(items: readonly T[], r: number): T => items[Math.min(items.length - 1, Math.floor(r * items.length))] as T;

// ---- The world the payments happen in -------------------------------------------------------

interface CountryInfo {
  code: string;
  currency: string;
  /** Relative share of the cards issued there. */
  weight: number;
}
const COUNTRIES: readonly CountryInfo[] = [
  { code: "SA", currency: "SAR", weight: 40 },
  { code: "AE", currency: "AED", weight: 20 },
  { code: "GB", currency: "GBP", weight: 10 },
  { code: "FR", currency: "EUR", weight: 8 },
  { code: "DE", currency: "EUR", weight: 8 },
  { code: "US", currency: "USD", weight: 8 },
  { code: "IN", currency: "INR", weight: 6 },
];
/** Where large foreign fraud tends to be cashed out in this synthetic world. */
const FRAUD_COUNTRIES: readonly CountryInfo[] = [
  { code: "NG", currency: "NGN", weight: 1 },
  { code: "RU", currency: "RUB", weight: 1 },
  { code: "BR", currency: "BRL", weight: 1 },
  { code: "VN", currency: "VND", weight: 1 },
];

interface CategoryInfo {
  mcc: string;
  name: string;
  weight: number;
  /** Median amount, major units. */
  median: number;
  channels: readonly string[];
}
const CATEGORIES: readonly CategoryInfo[] = [
  { mcc: "5411", name: "grocery", weight: 30, median: 45, channels: ["pos", "contactless"] },
  { mcc: "5812", name: "restaurants", weight: 18, median: 35, channels: ["pos", "contactless"] },
  { mcc: "5541", name: "fuel", weight: 12, median: 60, channels: ["pos", "contactless"] },
  { mcc: "5999", name: "retail", weight: 12, median: 80, channels: ["pos", "ecommerce", "contactless"] },
  { mcc: "4121", name: "rideshare", weight: 8, median: 18, channels: ["ecommerce"] },
  { mcc: "5732", name: "electronics", weight: 6, median: 450, channels: ["pos", "ecommerce"] },
  { mcc: "4511", name: "airlines", weight: 3, median: 900, channels: ["ecommerce"] },
  { mcc: "7011", name: "hotels", weight: 3, median: 400, channels: ["ecommerce", "pos"] },
  { mcc: "6011", name: "cash", weight: 5, median: 200, channels: ["atm"] },
  { mcc: "5816", name: "digital goods", weight: 3, median: 12, channels: ["ecommerce"] },
];
const MERCHANTS_PER_CATEGORY = 40;

function weighted<T extends { weight: number }>(items: readonly T[], r: number): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let x = r * total;
  for (const item of items) {
    x -= item.weight;
    if (x < 0) return item;
  }
  return items[items.length - 1] as T;
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");
const round2 = (x: number) => Math.round(x * 100) / 100;

/** A log-normal amount around `median` (most payments small, a long tail of large ones). */
function amountAround(median: number, r1: number, r2: number): number {
  // Box–Muller on two uniforms; sigma 0.8 gives a realistic spread.
  const z = Math.sqrt(-2 * Math.log(1 - r1)) * Math.cos(2 * Math.PI * r2);
  return Math.max(1, round2(median * Math.exp(0.8 * z)));
}

/** The card's home country: fixed per (seed, card). */
function cardHome(seed: number, card: number): CountryInfo {
  return weighted(COUNTRIES, rngFor(seed, card, 101)());
}

// ---- Fraud patterns -------------------------------------------------------------------------

/** Card-testing bursts occupy the first BURST_LENGTH events of a block of BLOCK events. */
const BLOCK = 50;
const BURST_LENGTH = 8;

/**
 * Event `index` of seed `seed` at event time `timestampMs`: a deterministic, realistic payment.
 *
 * About `fraudRate` of the payments are fraud, half as card-testing bursts (one stolen card makes
 * BURST_LENGTH small e-commerce payments at different merchants among consecutive events, ending
 * in a large one: a velocity rule's target) and half as single large payments abroad.
 */
export function generateDemoPayment(
  seed: number,
  index: number,
  timestampMs: number,
  opts: { cardCount?: number; fraudRate?: number } = {},
): DemoPayment {
  const cardCount = Math.max(1, Math.floor(opts.cardCount ?? 500));
  const fraudRate = Math.min(1, Math.max(0, opts.fraudRate ?? 0.02));
  const r = rngFor(seed, index, 1);

  const block = Math.floor(index / BLOCK);
  const inBurst = index % BLOCK < BURST_LENGTH;
  const burstProbability = Math.min(1, ((fraudRate / 2) * BLOCK) / BURST_LENGTH);
  const burst = inBurst && rngFor(seed, block, 7)() < burstProbability;

  let card: number;
  let category: CategoryInfo;
  let merchant: number;
  let country: CountryInfo;
  let amount: number;
  let fraudPattern: string | null = null;

  if (burst) {
    const rb = rngFor(seed, block, 8);
    card = Math.floor(rb() * cardCount);
    category = CATEGORIES.find((c) => c.name === "digital goods") ?? (CATEGORIES[0] as CategoryInfo);
    merchant = Math.floor(r() * MERCHANTS_PER_CATEGORY);
    country = cardHome(seed, card);
    const last = index % BLOCK === BURST_LENGTH - 1;
    amount = last ? round2(1500 + r() * 3500) : round2(1 + r() * 4);
    fraudPattern = "card-testing";
  } else {
    // Zipf-like card activity: a few cards pay often, most rarely (realistic key skew).
    card = Math.min(cardCount - 1, Math.floor(cardCount * Math.pow(r(), 1.6)));
    category = weighted(CATEGORIES, r());
    merchant = Math.floor(Math.pow(r(), 2) * MERCHANTS_PER_CATEGORY);
    const home = cardHome(seed, card);
    const largeForeign = r() < fraudRate / 2;
    if (largeForeign) {
      country = weighted(FRAUD_COUNTRIES, r());
      category = CATEGORIES.find((c) => c.name === "electronics") ?? category;
      amount = round2(2000 + r() * 13000);
      fraudPattern = "large-foreign";
    } else {
      // Most payments at home; a few while travelling.
      country = r() < 0.05 ? weighted(COUNTRIES, r()) : home;
      amount = amountAround(category.median, r(), r());
    }
  }

  const home = cardHome(seed, card);
  const channel = fraudPattern === "card-testing" ? "ecommerce" : pick(category.channels, r());
  return {
    txId: `tx-${seed}-${index}`,
    cardId: `card-${pad(card, 6)}`,
    customerId: `cust-${pad(card, 6)}`,
    merchantId: `m-${category.mcc}-${pad(merchant, 3)}`,
    mcc: category.mcc,
    merchantCategory: category.name,
    amount,
    currency: country.currency,
    country: country.code,
    cardCountry: home.code,
    channel,
    ts: timestampMs,
    isFraud: fraudPattern !== null,
    fraudPattern,
  };
}

export const sourceDemoSpec = defineOperator({
  type: "source.demo",
  version: 1,
  category: "source",
  title: "Demo payments",
  summary: "Built-in generator of realistic card payments, with labelled fraud",
  docs: `Generates card payments for demos and tutorials, with no broker. Each payment has
${DEMO_PAYMENT_FIELDS.map((f) => `\`${f}\``).join(", ")}; \`ts\` is its event time (epoch ms).

The generator is deterministic: with the same \`seed\` the same payments come in the same order, so a demo
pipeline's alerts can be compared between runs. Card activity is skewed (a few cards pay often), most
payments happen in the card's home country, and about \`fraudRate\` of them are fraud, labelled by
\`isFraud\` and \`fraudPattern\`:
- \`card-testing\`: one stolen card makes 8 tiny e-commerce payments in quick succession, then a large one
  (try \`keyBy cardId → velocity\`);
- \`large-foreign\`: a single large electronics payment far from home (try \`filter amount > 2000 && country != cardCountry\`).

Timestamps follow the runner's clock, in order; \`maxOutOfOrdernessMs\` still applies to the watermark.`,
  params: sourceDemoParams,
  inputs: [],
  outputs: sourceOutputs,
  requiresKeyedInput: false,
  stateful: false,
  outputFields: () => DEMO_PAYMENT_FIELDS,
});
