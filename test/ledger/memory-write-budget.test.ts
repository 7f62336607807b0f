import { MemoryWriteBudget } from '../../src/ledger/memory-write-budget.js';
import { describeWriteBudgetContract } from '../helpers/write-budget-contract.js';

// The process-local budget keeps the rules the shared ones keep; its "connections" are views of one map.
let current = new MemoryWriteBudget();
const closable = (budget: MemoryWriteBudget) => Object.assign(budget, { close: async () => undefined });
describeWriteBudgetContract(
  'in-memory',
  async () => {
    current = new MemoryWriteBudget();
    return closable(current);
  },
  async () => closable(current.connect()),
);
