-- Sign-in throttling (issue 35, point 7): attempts counted atomically per client address and per
-- account, and the addresses each account has signed in from. Additive only.
-- CreateTable
CREATE TABLE "sign_in_throttles" (
    "key" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "blocked_until" TIMESTAMPTZ(3),
    "last_refused" BOOLEAN NOT NULL DEFAULT false,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sign_in_throttles_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "sign_in_addresses" (
    "email" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "last_success_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sign_in_addresses_pkey" PRIMARY KEY ("email","address")
);
