// form-budget.tsx: the agent form's budget section: settings.budget, in
// dollars a UTC day, a UTC month, and a UTC day for each user.
import { Group, TextField } from "../ui";
import { type BudgetDraft, type SectionProps, budgetKeys, budgetProblem } from "./draft";

// budgetLabels name each budget as the form shows it.
const budgetLabels: Record<keyof BudgetDraft, string> = {
  daily: "Daily (USD)",
  monthly: "Monthly (USD)",
  perUserDaily: "Daily for each user (USD)",
};

// BudgetFields is the form's budget section; each field says what is wrong
// with what is typed as it is typed.
export function BudgetFields({ draft: d, onChange, error }: SectionProps) {
  return (
    <Group
      id="budget"
      legend="Budget"
      hint="Empty for none. Days and months are UTC; once a budget is spent, new runs are refused until it resets (a run under way finishes)."
      error={error}
    >
      <div class="budget-fields">
        {budgetKeys.map((k) => (
          <TextField
            key={k}
            id={`budget-${k}`}
            label={budgetLabels[k]}
            error={error}
            problem={budgetProblem(d.budget[k])}
            type="text"
            inputMode="decimal"
            placeholder="none"
            value={d.budget[k]}
            onValue={(v) => onChange({ ...d, budget: { ...d.budget, [k]: v } })}
          />
        ))}
      </div>
    </Group>
  );
}
