"""A derivative's loop over a list of parameters, read again by vmap with the list batched
(issue 15, composition sweep: list_params under jvp, hessian, vmap): each transform copies the
loop's counter range (items_7 = list(items_5) = ... = list(range(len(ws)))); the chain is
followed to its end, so `ws[i]` stays an item of a list or a row of each example, as it turns
out when it runs (it was ws[:, i] of a list: TypeError). Against finite differences of the
inner function, example by example (composition_sweep_cases.check)."""
import composition_sweep_cases as cases


def test_vmap_of_hessian_of_jvp_over_a_list_of_parameters(x64):
    cases.check("list_params", ["jvp", "hessian", "vmap0"])
