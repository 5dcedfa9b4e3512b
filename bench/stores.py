"""Three small memory stores of unrelated domains, written as an agent writes entries, and developer prompts.

Each entry is what an agent would pass to MemoryWrite: a path, a title, a type, tags and
a few sentences of content. The stores are:

* ``payments``: a payments team's engineering memory (decisions, bugs, runbooks, conventions);
* ``lab``: a molecular biology lab's protocols and incidents;
* ``accounting``: a small company's bookkeeping and tax notes.

`DEV_PROMPTS` are messages a developer on the payments team might type, each naming at
least one person, product or place the store has never seen, with the entries of the
``payments`` store that answer it (an empty set: nothing in the store is about it, and a
reminder would be noise). They are split in two halves (`TUNING_PROMPTS`, `CHECK_PROMPTS`):
the first was looked at while choosing the discovery defaults, the second was not.
"""

from __future__ import annotations

from corpora import Doc

# (path, title, type, tags, content)
_PAYMENTS = [
    ("fact/ledger/database.md", "Ledger database decision", "fact", ["ledger", "postgres", "decision"],
     "Decision 2026-03-02: the ledger stays on Postgres 16 with synchronous replication. Owners: Priya and Tom. "
     "Revisit when ledger writes exceed 5k per second."),
    ("fact/ledger/double-entry.md", "Ledger is double-entry", "fact", ["ledger", "accounting"],
     "Every ledger transaction has balanced debit and credit lines; a transaction whose lines do not sum to zero "
     "is rejected by a database constraint."),
    ("fact/ledger/idempotency.md", "Idempotency keys on ledger writes", "fact", ["ledger", "idempotency", "api"],
     "Ledger writes carry an idempotency key stored for 7 days; a retried request with the same key returns the "
     "first result instead of posting twice."),
    ("experience/ledger-lock-incident.md", "Ledger lock contention incident", "experience", ["ledger", "incident"],
     "Month-end batch posting held row locks on the merchant balance table for minutes and payouts timed out. "
     "Fixed by posting in batches of 500 and ordering rows by account id."),
    ("fact/refunds/flow.md", "How refunds work", "fact", ["refunds", "flow"],
     "A refund creates a negative ledger entry, then calls the card processor; partial refunds are allowed up to "
     "the captured amount. Refunds older than 180 days go through manual review."),
    ("experience/refund-currency-bug.md", "Refund failed on null currency", "experience", ["refunds", "bug"],
     "Refunds crashed when the original charge had a null currency (legacy imports). Fixed by defaulting to the "
     "merchant account's settlement currency and backfilling the old rows."),
    ("fact/payouts/schedule.md", "Payout schedule", "fact", ["payouts", "merchants"],
     "Merchant payouts run daily at 02:00 UTC for the previous day's settled balance; new merchants wait 7 days "
     "before their first payout."),
    ("fact/payouts/holds.md", "Payout holds for risk", "fact", ["payouts", "risk"],
     "The risk team can hold a merchant's payouts; held funds stay in the reserve account and a hold longer than "
     "90 days needs a director's sign-off."),
    ("fact/fraud/rules.md", "Fraud rules engine", "fact", ["fraud", "risk", "rules"],
     "Card payments are scored by the rules engine before authorisation: velocity limits per card, country "
     "mismatch between card and IP, and a blocklist of device fingerprints."),
    ("experience/fraud-false-positives.md", "Fraud rule blocked good customers", "experience", ["fraud", "incident"],
     "A velocity rule of 3 charges per card per hour blocked subscription renewals that retried. Renewals are now "
     "exempt from the velocity rule."),
    ("fact/webhooks/delivery.md", "Webhook delivery and retries", "fact", ["webhooks", "api"],
     "Webhooks to merchants are signed with HMAC-SHA256 and retried with exponential backoff for up to 3 days; "
     "after that the event is marked failed and shown on the dashboard."),
    ("experience/webhook-storm.md", "Webhook retry storm", "experience", ["webhooks", "incident"],
     "A merchant endpoint returning 500 made our retry workers saturate the queue. We added a per-endpoint "
     "circuit breaker and jitter to the backoff."),
    ("fact/currency/conversion.md", "Currency conversion", "fact", ["currency", "fx"],
     "Currency conversion uses the rate snapshot taken at authorisation time, stored with the charge; amounts "
     "are integers in the currency's minor unit, never floats."),
    ("fact/currency/rounding.md", "Rounding rule for FX", "fact", ["currency", "fx", "rounding"],
     "Converted amounts are rounded half-even once, at the end of the calculation; rounding at each step caused "
     "one-cent drifts in settlement reports."),
    ("fact/api/versioning.md", "Public API versioning", "fact", ["api", "versioning"],
     "The public API is versioned by date in a request header; breaking changes get a new version and old "
     "versions are supported for 24 months."),
    ("fact/api/rate-limits.md", "API rate limits", "fact", ["api", "rate-limits"],
     "Merchants get 100 requests per second per API key; bursts above that receive 429 with a Retry-After header."),
    ("fact/deploy/process.md", "How we deploy", "fact", ["deploy", "ci"],
     "Every merge to main builds a container, runs the integration suite and deploys to staging; production "
     "deploys are blue-green, started by hand, never on Fridays after 15:00."),
    ("experience/deploy-rollback.md", "Rollback after a bad migration", "experience", ["deploy", "migration", "incident"],
     "A migration that added a NOT NULL column without a default locked the charges table. Rollback took 20 "
     "minutes. Migrations now add nullable columns first and backfill in a second release."),
    ("fact/db/migrations.md", "Database migration rules", "fact", ["database", "migrations"],
     "Schema migrations must be backward compatible with the previous release: add columns nullable, backfill, "
     "then add constraints; never rename a column in one step."),
    ("fact/testing/integration.md", "Integration tests", "fact", ["testing", "ci"],
     "Integration tests run against a real Postgres in a container and the card processor's sandbox; flaky tests "
     "are quarantined within a day and fixed within a week."),
    ("fact/testing/contract.md", "Contract tests for the processor", "fact", ["testing", "processor"],
     "Recorded responses of the card processor's sandbox are replayed in contract tests, refreshed monthly."),
    ("fact/review/conventions.md", "Code review conventions", "fact", ["review", "conventions"],
     "Every change needs one approval from the owning team; changes to money movement need two, one of them "
     "from the ledger team."),
    ("fact/oncall/rotation.md", "On-call rotation", "fact", ["oncall"],
     "On-call rotates weekly on Mondays; the primary answers pages within 15 minutes, the secondary within 30."),
    ("skill/oncall/payout-failure-runbook.md", "Runbook: payouts failed", "skill", ["oncall", "payouts", "runbook"],
     "When the payout job fails: check the bank file upload logs, re-run the job for the failed batch only, and "
     "tell support which merchants are late."),
    ("skill/oncall/processor-outage-runbook.md", "Runbook: card processor outage", "skill", ["oncall", "processor"],
     "When the card processor times out: switch traffic to the secondary processor with the feature flag, post "
     "on the status page, and watch the authorisation rate."),
    ("fact/processor/routing.md", "Processor routing", "fact", ["processor", "routing"],
     "Card traffic goes to the primary processor; the secondary takes over on outages and handles cards issued "
     "in regions the primary does not cover."),
    ("fact/compliance/pci.md", "PCI scope", "fact", ["compliance", "pci", "security"],
     "Card numbers never touch our servers: the hosted payment fields tokenise them, so only the tokenisation "
     "service is in PCI scope."),
    ("fact/compliance/data-retention.md", "Data retention", "fact", ["compliance", "privacy"],
     "Transaction records are kept for 10 years for audit; personal data of closed accounts is erased after "
     "5 years unless a dispute is open."),
    ("fact/disputes/chargebacks.md", "Chargebacks", "fact", ["disputes", "chargebacks"],
     "A chargeback debits the merchant's balance immediately; the merchant has 7 days to upload evidence, which "
     "we forward to the card network."),
    ("fact/subscriptions/billing.md", "Subscription billing", "fact", ["subscriptions", "billing"],
     "Subscriptions renew at the start of the billing period; a failed renewal is retried on days 1, 3 and 7, "
     "then the subscription is paused."),
    ("fact/observability/metrics.md", "Payment metrics and alerts", "fact", ["observability", "alerts"],
     "We alert when the authorisation rate drops 5 points below its weekly baseline or p99 latency of the charge "
     "API exceeds 2 seconds."),
    ("fact/observability/logging.md", "Logging rules", "fact", ["observability", "logging", "security"],
     "Logs never contain card numbers, CVCs or full bank account numbers; request ids tie log lines of one "
     "payment together."),
    ("fact/architecture/services.md", "Payments services map", "fact", ["architecture"],
     "The payments platform is five services: gateway, charges, ledger, payouts and risk; they talk over gRPC "
     "and publish events to a queue."),
    ("fact/architecture/queue.md", "Event queue", "fact", ["architecture", "queue", "events"],
     "Services publish domain events (charge.captured, refund.created) to the event queue; consumers must be "
     "idempotent because delivery is at least once."),
    ("fact/team/ownership.md", "Who owns what", "fact", ["team", "ownership"],
     "Priya's team owns the ledger and payouts; Tom's team owns the gateway, charges and processor routing; the "
     "risk team owns fraud rules."),
    ("fact/secrets/management.md", "Secrets management", "fact", ["security", "secrets"],
     "Secrets live in the vault and are injected at start-up; API keys of merchants are stored hashed and can be "
     "rolled from the dashboard."),
]

_LAB = [
    ("skill/pcr/standard.md", "Standard PCR protocol", "skill", ["pcr", "protocol"],
     "Mix 25 µl master mix, 1 µl each primer at 10 µM, template DNA and water to 50 µl; 30 cycles of 95 °C 30 s, "
     "58 °C 30 s, 72 °C 1 min per kb."),
    ("experience/pcr-no-bands.md", "PCR gave no bands", "experience", ["pcr", "troubleshooting"],
     "No bands after PCR turned out to be degraded primers from a freezer that failed over the weekend; order new "
     "primers and aliquot them."),
    ("skill/gel/agarose.md", "Agarose gel electrophoresis", "skill", ["gel", "protocol"],
     "Cast a 1% agarose gel in TAE with the DNA stain, load 5 µl of sample with loading dye, run at 100 V for 40 "
     "minutes and image under blue light."),
    ("skill/culture/passaging.md", "Passaging HEK293 cells", "skill", ["cell-culture", "protocol"],
     "Split HEK293 cells at 80% confluence: wash with PBS, trypsinise for 3 minutes, neutralise with medium and "
     "reseed at 1:8."),
    ("experience/contamination.md", "Mycoplasma contamination", "experience", ["cell-culture", "contamination"],
     "The monthly mycoplasma test came back positive for two flasks; all flasks from that incubator were discarded "
     "and the incubator was decontaminated."),
    ("fact/safety/biosafety.md", "Biosafety level", "fact", ["safety"],
     "The lab is biosafety level 2; lentivirus work happens only in the class II cabinet with double gloves."),
    ("fact/safety/waste.md", "Waste disposal", "fact", ["safety", "waste"],
     "Biological waste is autoclaved before disposal; ethidium-free gels go to normal waste, sharps to the yellow "
     "bins."),
    ("fact/equipment/centrifuge.md", "Centrifuge booking", "fact", ["equipment"],
     "The ultracentrifuge is booked on the shared calendar; rotors are logged after each run for the fatigue count."),
    ("fact/equipment/freezer.md", "Minus 80 freezer", "fact", ["equipment", "storage"],
     "The -80 freezer alarm calls the on-duty phone; in a failure move boxes to the backup freezer in room 214."),
    ("skill/western/blot.md", "Western blot protocol", "skill", ["western", "protein", "protocol"],
     "Run 20 µg of protein on a 10% gel, transfer to PVDF at 100 V for an hour, block in 5% milk, primary antibody "
     "overnight at 4 °C."),
    ("experience/western-background.md", "High background on western blots", "experience", ["western", "troubleshooting"],
     "High background came from too much secondary antibody; diluting it 1:10000 and washing 3 times 10 minutes "
     "fixed it."),
    ("skill/cloning/gibson.md", "Gibson assembly", "skill", ["cloning", "protocol"],
     "Design 20-40 bp overlaps, mix vector and inserts at 1:3 molar ratio with the assembly master mix and incubate "
     "at 50 °C for an hour before transforming."),
    ("skill/cloning/transformation.md", "Bacterial transformation", "skill", ["cloning", "bacteria"],
     "Thaw competent cells on ice, add 2 µl of assembly, heat shock 45 s at 42 °C, recover in SOC for an hour and "
     "plate on selective agar."),
    ("fact/reagents/antibodies.md", "Antibody inventory", "fact", ["reagents", "antibodies"],
     "Antibodies are listed in the inventory sheet with their dilution and lot; a new lot is validated on a control "
     "lysate before use."),
    ("fact/reagents/ordering.md", "Ordering reagents", "fact", ["reagents", "purchasing"],
     "Reagents over 500 in cost need the lab manager's approval; standing orders for media and plastics arrive on "
     "Tuesdays."),
    ("skill/qpcr/analysis.md", "qPCR analysis", "skill", ["qpcr", "analysis"],
     "Normalise Ct values to two reference genes and use the delta-delta Ct method; discard wells whose melt curve "
     "shows two peaks."),
    ("experience/qpcr-primer-dimers.md", "Primer dimers in qPCR", "experience", ["qpcr", "troubleshooting"],
     "A second melt peak was primer dimers; lowering the primer concentration to 200 nM removed it."),
    ("fact/microscopy/confocal.md", "Confocal microscope", "fact", ["microscopy", "equipment"],
     "Training is required before booking the confocal; laser lines 405, 488, 561 and 640 nm; save raw files to "
     "the imaging share."),
    ("skill/microscopy/immunofluorescence.md", "Immunofluorescence staining", "skill", ["microscopy", "protocol"],
     "Fix cells in 4% paraformaldehyde for 15 minutes, permeabilise with 0.1% Triton, block, then stain with "
     "primary and fluorescent secondary antibodies."),
    ("fact/data/notebook.md", "Lab notebook rules", "fact", ["data", "records"],
     "Every experiment is recorded in the electronic notebook on the day, with reagent lots and raw data links."),
    ("fact/sequencing/submission.md", "Sending samples for sequencing", "fact", ["sequencing"],
     "Sanger samples go to the core facility by 11:00 for same-day runs: 10 µl of plasmid at 100 ng/µl with the "
     "primer premixed."),
    ("experience/sequencing-mixup.md", "Sequencing sample mix-up", "experience", ["sequencing", "incident"],
     "Two plasmids were swapped because tubes were labelled by hand; we now print barcoded labels."),
    ("fact/culture/media.md", "Cell culture media", "fact", ["cell-culture", "reagents"],
     "HEK293 cells grow in DMEM with 10% FBS and penicillin-streptomycin; media bottles are used within a month of "
     "opening."),
    ("skill/protein/purification.md", "His-tag protein purification", "skill", ["protein", "protocol"],
     "Lyse cells, clear by centrifugation, bind to nickel resin for an hour, wash with 20 mM imidazole and elute "
     "with 250 mM."),
    ("fact/safety/chemicals.md", "Chemical storage", "fact", ["safety", "chemicals"],
     "Flammables are kept in the ventilated cabinet; acids and bases on separate shelves; every bottle is dated "
     "when opened."),
]

_ACCOUNTING = [
    ("fact/vat/returns.md", "VAT returns", "fact", ["vat", "tax"],
     "VAT returns are filed quarterly, due one month and seven days after the quarter ends; input VAT needs a valid "
     "invoice to be reclaimed."),
    ("fact/vat/reverse-charge.md", "Reverse charge", "fact", ["vat", "tax"],
     "Services bought from suppliers abroad fall under the reverse charge: we account for the VAT ourselves and "
     "reclaim it in the same return."),
    ("fact/payroll/schedule.md", "Payroll schedule", "fact", ["payroll"],
     "Salaries are paid on the 25th; payroll is submitted by the 20th, with overtime and expenses approved by the "
     "18th."),
    ("fact/payroll/pensions.md", "Pension contributions", "fact", ["payroll", "pensions"],
     "The company contributes 5% of qualifying earnings to the workplace pension; employees may opt out in the "
     "first month."),
    ("fact/expenses/policy.md", "Expense policy", "fact", ["expenses", "policy"],
     "Expenses need a receipt and are claimed within 60 days; meals while travelling up to 40 per day, economy "
     "class travel only."),
    ("experience/expenses-duplicate.md", "Duplicate expense claims", "experience", ["expenses", "audit"],
     "The same hotel invoice was claimed twice by two people sharing a room; claims are now matched by invoice "
     "number."),
    ("fact/invoicing/terms.md", "Invoice terms", "fact", ["invoicing", "receivables"],
     "Customer invoices are payable within 30 days; reminders go out at 7 and 21 days overdue, then the account is "
     "put on hold."),
    ("fact/invoicing/numbering.md", "Invoice numbering", "fact", ["invoicing"],
     "Invoice numbers are sequential without gaps per financial year; a cancelled invoice is reversed with a credit "
     "note, never deleted."),
    ("fact/close/month-end.md", "Month-end close", "fact", ["close", "reporting"],
     "Month-end close takes five working days: bank reconciliation, accruals, prepayments, depreciation, then the "
     "management accounts."),
    ("fact/close/accruals.md", "Accruals", "fact", ["close", "accruals"],
     "Costs received but not yet invoiced are accrued at month end and reversed on the first day of the next month."),
    ("fact/assets/depreciation.md", "Depreciation policy", "fact", ["assets", "depreciation"],
     "Laptops are depreciated straight-line over 3 years, furniture over 5; assets under 1000 are expensed."),
    ("fact/bank/reconciliation.md", "Bank reconciliation", "fact", ["bank", "reconciliation"],
     "Every bank account is reconciled weekly; unmatched items older than 30 days are escalated to the finance lead."),
    ("experience/reconciliation-gap.md", "Reconciliation gap", "experience", ["bank", "reconciliation", "incident"],
     "A 2,300 difference in the bank reconciliation was a supplier refund posted to the wrong account; fixed with a "
     "journal and a note for the auditors."),
    ("fact/tax/corporation.md", "Corporation tax", "fact", ["tax"],
     "Corporation tax is paid nine months and a day after the year end; R&D relief is claimed on the return."),
    ("fact/audit/annual.md", "Annual audit", "fact", ["audit"],
     "The auditors visit in the second month after year end; they need the fixed asset register, bank letters and "
     "the stock count."),
    ("fact/suppliers/onboarding.md", "Supplier onboarding", "fact", ["suppliers", "payables"],
     "New suppliers send bank details on letterhead; changes to bank details are confirmed by phone before any "
     "payment, to stop invoice fraud."),
    ("experience/invoice-fraud.md", "Invoice fraud attempt", "experience", ["payables", "fraud"],
     "An email asked to change a supplier's bank account; the phone check found it fake. Nothing was paid."),
    ("fact/payables/runs.md", "Payment runs", "fact", ["payables"],
     "Supplier payment runs are on Thursdays; invoices need a purchase order and a goods received note to be paid."),
    ("fact/budget/process.md", "Budget process", "fact", ["budget", "planning"],
     "Department budgets are set in November for the next year and reforecast each quarter."),
    ("fact/stock/count.md", "Stock count", "fact", ["stock", "inventory"],
     "A full stock count is done on the last day of the financial year; discrepancies over 2% are recounted."),
    ("fact/grants/reporting.md", "Grant reporting", "fact", ["grants"],
     "Grant-funded costs are tracked on their own cost centre; claims are made quarterly with timesheets attached."),
    ("skill/close/bank-feed.md", "Fixing a broken bank feed", "skill", ["bank", "howto"],
     "When the bank feed stops: re-authorise the connection in the accounting system, then import the missing days "
     "from a statement file."),
    ("fact/currency/revaluation.md", "Foreign currency revaluation", "fact", ["currency", "close"],
     "Balances in foreign currency are revalued at the month-end rate; gains and losses go to the FX account."),
    ("fact/approvals/limits.md", "Approval limits", "fact", ["approvals", "policy"],
     "Purchases up to 5,000 are approved by the budget holder, up to 25,000 by the finance director, above that by "
     "the board."),
]

STORES = {"payments": _PAYMENTS, "lab": _LAB, "accounting": _ACCOUNTING}


def store_docs(name: str) -> list[Doc]:
    """The entries of one store as `corpora.Doc` (what `corpora.write_store` writes)."""
    return [Doc(path, content, title=title, metadata={"type": kind, "tags": tags})
            for path, title, kind, tags, content in STORES[name]]


# (message, the payments entries that answer it); every message names something the store has never seen.
DEV_PROMPTS: list[tuple[str, set[str]]] = [
    ("Should we move the ledger to CockroachDB?", {"fact/ledger/database.md"}),
    ("Can you ask Bob about the ledger decision?", {"fact/ledger/database.md"}),
    ("I want to learn Rust in depth", set()),
    ("Marco says refunds are failing for some old charges, any idea why?", {"experience/refund-currency-bug.md", "fact/refunds/flow.md"}),
    ("Would Temporal be a good fit for the payout job?", {"fact/payouts/schedule.md", "skill/oncall/payout-failure-runbook.md"}),
    ("How do I set up Neovim with a Lua config?", set()),
    ("Jasmine wants to know how long webhooks are retried before we give up", {"fact/webhooks/delivery.md"}),
    ("Could we replace the event queue with Kafka?", {"fact/architecture/queue.md"}),
    ("Write a haiku about Kubernetes", set()),
    ("Is it safe to log card numbers in Datadog for debugging?", {"fact/observability/logging.md", "fact/compliance/pci.md"}),
    ("Ahmed asked whether a merchant can refund more than they captured", {"fact/refunds/flow.md"}),
    ("What's the best way to learn Haskell type classes?", set()),
    ("Set up a Grafana dashboard for the authorisation rate drop alert", {"fact/observability/metrics.md"}),
    ("Lena from support asks why a merchant's payouts are on hold", {"fact/payouts/holds.md"}),
    ("Can you explain how Docker layers are cached?", set()),
    ("The Adyen sandbox is down, how do we run the contract tests?", {"fact/testing/contract.md"}),
    ("Explain the difference between Python's asyncio and Trio", set()),
    ("Does Oksana need a second reviewer for her change to the money movement code?", {"fact/review/conventions.md"}),
    ("Migrate our integration tests to Testcontainers Cloud", {"fact/testing/integration.md"}),
    ("Should Sven's new column be added as NOT NULL in the migration?", {"fact/db/migrations.md", "experience/deploy-rollback.md"}),
    ("What is the capital of Mongolia?", set()),
    ("Ravi wants to deploy to production on Friday evening, is that okay?", {"fact/deploy/process.md"}),
    ("Can we use Vitess to shard the ledger?", {"fact/ledger/database.md"}),
    ("Recommend a good book on Scala", set()),
    ("How does the rounding work when converting yen to euros in Zurich?", {"fact/currency/rounding.md", "fact/currency/conversion.md"}),
    ("Mei is on call next week, what should she do if the card processor times out?", {"skill/oncall/processor-outage-runbook.md", "fact/oncall/rotation.md"}),
    ("Write a bash one-liner to find large files on macOS", set()),
    ("Giulia from Checkout.com asked about our chargeback evidence deadline", {"fact/disputes/chargebacks.md"}),
    ("Can I store floats for amounts in the new Snowflake export?", {"fact/currency/conversion.md"}),
    ("Explain React Server Components to me", set()),
    ("Is the tokenisation service the only thing in PCI scope, Hannah wonders", {"fact/compliance/pci.md"}),
    ("How do I rebase a branch in Git without losing commits?", set()),
    ("Pedro's subscription renewals are getting blocked by fraud checks", {"experience/fraud-false-positives.md", "fact/fraud/rules.md"}),
    ("Summarise the plot of Dune", set()),
    ("Can we rate limit merchants per key using Envoy?", {"fact/api/rate-limits.md"}),
    ("What did we learn from the webhook storm that hit Shopify merchants?", {"experience/webhook-storm.md"}),
    ("Translate this sentence into Portuguese: the build is green", set()),
    ("How long do we keep personal data for closed accounts under GDPR?", {"fact/compliance/data-retention.md"}),
    ("Klaus from the audit firm asks how long transaction records are kept", {"fact/compliance/data-retention.md"}),
    ("Show me how to use SQLAlchemy's async session", set()),
    ("Is the public API going to break when Acme upgrades to the new version?", {"fact/api/versioning.md"}),
    ("Tariq wants to know who owns processor routing", {"fact/team/ownership.md", "fact/processor/routing.md"}),
    ("What's a good name for a golden retriever?", set()),
    ("Could the month-end posting lock problem come back with Citus?", {"experience/ledger-lock-incident.md"}),
    ("How do I profile a slow Go service with pprof?", set()),
    ("Rotate the merchant API key for Globex", {"fact/secrets/management.md"}),
    ("Explain the CAP theorem like I'm five", set()),
    ("Fatima asks when a new merchant gets the first payout", {"fact/payouts/schedule.md"}),
    ("Help me write a cover letter for a job at Spotify", set()),
    ("Do consumers of charge.captured events in the Billing service need to be idempotent?", {"fact/architecture/queue.md"}),
    ("Priyanka says a transaction with unbalanced lines got through, is that possible?", {"fact/ledger/double-entry.md"}),
    ("What are the new features in Java 21?", set()),
    ("A retried request from Initech posted twice to the ledger, how?", {"fact/ledger/idempotency.md"}),
    ("Generate a regex that matches UK postcodes", set()),
    ("Should we page Olu within 15 minutes for an alert at night?", {"fact/oncall/rotation.md"}),
    ("Compare Terraform and Pulumi for a small team", set()),
    ("Route Brazilian cards to the secondary processor, like Nubank asked", {"fact/processor/routing.md"}),
    ("What does the Linux OOM killer do?", set()),
    ("Hiroshi wants to add a new service next to gateway and charges, how do the services talk?", {"fact/architecture/services.md"}),
    ("Plan a three-day trip to Lisbon", set()),
    ("The payout bank file upload to Barclays failed last night, what now?", {"skill/oncall/payout-failure-runbook.md"}),
    ("Tips for a first talk at PyCon?", set()),
    ("Can Wojciech release a risk hold that has lasted four months?", {"fact/payouts/holds.md"}),
    ("How do I center a div in Tailwind?", set()),
    ("Vault is sealed after the restart, where are our secrets injected from?", {"fact/secrets/management.md"}),
    ("Explain monads with an example in TypeScript", set()),
    ("Noor asks whether subscriptions are paused after failed renewals", {"fact/subscriptions/billing.md"}),
    ("What is the tallest mountain in Africa?", set()),
    ("Add a velocity limit for cards from Nigeria to the fraud rules", {"fact/fraud/rules.md"}),
    ("Write unit tests for a FizzBuzz in Elixir", set()),
    ("Does the charge API p99 alert fire at 2 seconds in PagerDuty?", {"fact/observability/metrics.md"}),
    ("How do I install CUDA on Ubuntu 24.04?", set()),
    ("Is a partial refund on a Revolut card allowed after 200 days?", {"fact/refunds/flow.md"}),
    ("Who is the best chess player of all time, Carlsen or Kasparov?", set()),
    ("Esther needs the HMAC signing details for webhooks", {"fact/webhooks/delivery.md"}),
    ("Explain how Bitcoin mining works", set()),
    ("What happened when the migration locked the charges table, Dmitri asks", {"experience/deploy-rollback.md"}),
    ("Make a Spotify playlist for coding", set()),
    ("Can we drop support for the 2023 API version that Umbrella still uses?", {"fact/api/versioning.md"}),
    ("How do I write a Dockerfile for a Django app?", set()),
    ("Quarantine the flaky test Yusuf added yesterday", {"fact/testing/integration.md"}),
    ("What's new in PostgreSQL 17 for logical replication?", set()),
    ("Can Kenji approve his own change to the ledger posting code?", {"fact/review/conventions.md"}),
    ("Write a limerick about Jenkins", set()),
    ("Should the Stripe Connect migration keep amounts as integers in minor units?", {"fact/currency/conversion.md"}),
    ("How do I use Copilot in VS Code?", set()),
    ("Anika found a one-cent drift in the settlement report", {"fact/currency/rounding.md"}),
    ("What's the weather like in Reykjavik in March?", set()),
    ("Rename the merchant_id column in one migration, Bogdan suggests", {"fact/db/migrations.md"}),
    ("Tell me a joke about Perl", set()),
    ("A customer in Ohio disputed a charge, what happens to the merchant balance?", {"fact/disputes/chargebacks.md"}),
    ("How does garbage collection work in the JVM?", set()),
    ("Are device fingerprints from Sift blocklisted in our rules engine?", {"fact/fraud/rules.md"}),
    ("Explain OAuth 2 PKCE flow", set()),
    ("Request ids in Honeycomb should tie a payment's log lines together, right?", {"fact/observability/logging.md"}),
    ("Recommend a mechanical keyboard from Keychron", set()),
    ("Mateo asks which team owns the ledger and payouts", {"fact/team/ownership.md"}),
    ("Write a SQL query for the top ten customers in BigQuery", set()),
    ("Can the gRPC calls between services go through Linkerd?", {"fact/architecture/services.md"}),
    ("What is Zig's comptime?", set()),
    ("Should Amara's retry worker add jitter to webhook backoff?", {"experience/webhook-storm.md", "fact/webhooks/delivery.md"}),
    ("Set up Renovate for our Python repos", set()),
    ("Isabela reports that refunds crash with a null currency on imported charges from Magento", {"experience/refund-currency-bug.md"}),
    ("How do I make sourdough bread?", set()),
    ("Does Wise charge more for payouts in GBP?", set()),
    ("thanks Sam!", set()),
    ("hello Maria", set()),
]

_ANSWERABLE = [prompt for prompt in DEV_PROMPTS if prompt[1]]
_UNANSWERABLE = [prompt for prompt in DEV_PROMPTS if not prompt[1]]
TUNING_PROMPTS = _ANSWERABLE[0::2] + _UNANSWERABLE[0::2]
CHECK_PROMPTS = _ANSWERABLE[1::2] + _UNANSWERABLE[1::2]

__all__ = ["CHECK_PROMPTS", "DEV_PROMPTS", "STORES", "TUNING_PROMPTS", "store_docs"]
